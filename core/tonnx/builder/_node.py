"""The builder's light node record, turned into a NodeProto only when the model is written."""

from __future__ import annotations

from typing import Any


class Node:
    """One ONNX node under construction.

    Plain Python lists and dicts are far cheaper to create and rewrite than protobuf
    messages, and the optimization passes rewrite names in place.
    """

    __slots__ = ("op_type", "inputs", "outputs", "attributes", "domain", "name", "metadata")

    def __init__(
        self,
        op_type: str,
        inputs: list[str],
        outputs: list[str],
        attributes: dict[str, Any],
        domain: str,
        name: str,
        metadata: dict[str, str] | None,
    ):
        self.op_type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.attributes = attributes
        self.domain = domain
        self.name = name
        self.metadata = metadata

    def __repr__(self) -> str:
        dom = f"{self.domain}." if self.domain else ""
        return f"{dom}{self.op_type}({', '.join(self.inputs)}) -> {', '.join(self.outputs)}"

    def subgraphs(self) -> list:
        """Sub-builders held by graph attributes (the branches of an If, a Loop body)."""
        attributes = self.attributes
        if not attributes:
            return []
        return [v for v in attributes.values() if hasattr(v, "nodes")]
