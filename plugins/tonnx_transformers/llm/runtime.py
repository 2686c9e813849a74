"""``--runtime``: which runtime the folder's graph is for.

- ``onnxruntime`` (default): the export as configured (with the ``tonnx-ortcontrib`` pack
  installed, onnxruntime's ``com.microsoft`` fused ops; at opset 20, see ``ONNXRUNTIME_OPSET``).
- ``onnx``: the portable flavor, standard domain only, at opset 23: attention is ONNX
  ``Attention``, RMSNorm ``RMSNormalization``, rotary embeddings ``RotaryEmbedding`` (the
  aten pack's rewrites), so the graph is about as compact as the fused one and any ONNX
  runtime with opset 23 can run it. The contrib pack is blocked for this export and the
  written graph is checked: a node of another domain is refused, naming the pack that
  made it.
"""

from __future__ import annotations

from typing import Any

RUNTIMES = ("onnxruntime", "onnx")

#: the first opset with Attention, RMSNormalization and RotaryEmbedding
PORTABLE_OPSET = 23

#: The onnxruntime flavor's main-domain opset, whatever tonnx's default: its attention,
#: rotary and norms are ``com.microsoft`` ops, and from 23 the aten pack's
#: ``RMSNormalization`` takes each norm before the residual Add can fuse into it
#: (``SkipSimplifiedLayerNormalization``: 2 nodes a layer more, which a decode step pays).
ONNXRUNTIME_OPSET = 20

#: packs whose converters emit onnxruntime's contrib domain
_CONTRIB_PACKS = ("ortcontrib",)

#: precisions written with com.microsoft ops (MatMulNBits)
_CONTRIB_PRECISIONS = ("int8", "int4")


def check_runtime(runtime: str, precision: str) -> None:
    """Refuses an unknown runtime, and a precision the portable flavor cannot express."""
    from tonnx import UnsupportedError

    if runtime not in RUNTIMES:
        raise UnsupportedError(f"runtime={runtime!r}: choose one of {', '.join(RUNTIMES)}.")
    if runtime == "onnx" and precision in _CONTRIB_PRECISIONS:
        raise UnsupportedError(
            f"--precision {precision} --runtime onnx: the quantized layers are "
            f"com.microsoft.MatMulNBits nodes, which the portable flavor excludes; use "
            f"--runtime onnxruntime, or fp32/fp16."
        )


def to_onnx_options(runtime: str, packs: list, context_length: int) -> dict[str, Any]:
    """``target_opset=`` and ``dispatcher=`` for ``to_onnx``; ``packs``: the precision's
    own (quantization), added for the default runtime with the genai folder's step
    rules: rotary tables of ``context_length`` positions (position_tables.py), the
    attention bias read from attention_mask (padding_bias.py) and the residual Adds fused
    into the norms (skip_norm.py)."""
    import tonnx

    if runtime != "onnx":
        from .padding_bias import padding_bias_pack
        from .position_tables import position_tables_pack
        from .skip_norm import skip_norm_pack

        step = [position_tables_pack(context_length), padding_bias_pack(), skip_norm_pack()]
        return {"target_opset": ONNXRUNTIME_OPSET, "dispatcher": tonnx.Dispatcher(extra_packs=[*packs, *step])}
    if packs:
        raise tonnx.UnsupportedError(
            "--runtime onnx with a precision that adds its own converter pack; use fp32 or fp16."
        )
    blocked = [f"no:{name}" for name in _CONTRIB_PACKS]
    return {"target_opset": PORTABLE_OPSET, "dispatcher": tonnx.Dispatcher(packs=blocked)}


def check_portable(runtime: str, onx: Any) -> None:
    """The portable graph holds standard-domain nodes only (functions and subgraphs too)."""
    if runtime != "onnx":
        return
    foreign = {}
    for node in all_nodes(onx):
        if node.domain not in ("", "ai.onnx"):
            meta = {p.key: p.value for p in node.metadata_props}
            made_by = meta.get("pkg.tonnx.converter", "?").split(":")[0]
            foreign.setdefault(f"{node.domain}.{node.op_type}", made_by)
    if foreign:
        from tonnx import UnsupportedError

        listed = ", ".join(f"{op} (pack {pack})" for op, pack in sorted(foreign.items()))
        raise UnsupportedError(
            f"--runtime onnx: the graph holds nodes outside the standard domain: {listed}. "
            f"Block their pack (TONNX_PACKS=no:<pack>) or use --runtime onnxruntime."
        )


def all_nodes(onx: Any):
    """Every node of ``onx``: its graph's, its functions', their subgraphs'."""
    from onnx import AttributeProto

    graphs = [onx.graph, *onx.functions]
    while graphs:
        for node in graphs.pop().node:
            yield node
            for attr in node.attribute:
                if attr.type == AttributeProto.GRAPH:
                    graphs.append(attr.g)
                elif attr.type == AttributeProto.GRAPHS:
                    graphs.extend(attr.graphs)
