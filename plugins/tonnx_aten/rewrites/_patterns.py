"""What the rules read off the converted graph: producers, constants and shapes."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

#: The first opset with RMSNormalization and RotaryEmbedding in the standard domain.
OPSET = 23


def applies(ctx, *names: str) -> bool:
    """The target opset has the fused op and the values are float32 (the only type whose
    fused kernel computes what the primitive graph computes)."""
    g = ctx.g
    if g.main_opset < OPSET:
        return False
    return all(g.has_type(n) and g.get_type(n) == TensorProto.FLOAT for n in names)


def same(a, b) -> bool:
    """Two dimensions known to be equal (the same int or the same symbol)."""
    return a == b and type(a) is type(b)


def producer(ctx, name: str, op_type: str):
    """The live standard-domain ``op_type`` node computing ``name`` (through Identity)."""
    node = ctx.producer(name)
    while node is not None and node.op_type == "Identity" and not node.domain:
        node = ctx.producer(node.inputs[0])
    if node is None or node.domain or node.op_type != op_type:
        return None
    return node


def only_read_by_pattern(ctx, *names: str) -> bool:
    """Each intermediate has one reader (the next node of the pattern) and is no output."""
    return all(ctx.readers(n) == 1 and not ctx.is_output(n) for n in names)


def constant(ctx, name: str) -> np.ndarray | None:
    g = ctx.g
    return g.get_constant(name) if name and g.is_constant(name) else None


def scalar(ctx, name: str) -> float | None:
    """The value of a constant holding one element, else None."""
    value = constant(ctx, name)
    if value is None or value.size != 1:
        return None
    return float(value.reshape(-1)[0])


def ints(ctx, name: str) -> list[int] | None:
    value = constant(ctx, name) if name else None
    return None if value is None else [int(v) for v in value.reshape(-1)]


def shape(ctx, name: str):
    return ctx.g.get_shape(name)


def int64(ctx, values) -> str:
    return ctx.g.make_initializer("", np.array(values, dtype=np.int64))
