"""transformers pack: the custom ops transformers registers under ``torch.ops.transformers``.

transformers 5 runs mixture-of-experts layers (Mixtral, Qwen3-MoE, DeepSeek-V3, ...)
through its own op ``transformers::grouped_mm_fallback`` whenever torch's grouped matmul
cannot be used (always under torch.export on CPU with float32 weights). No ONNX exporter
knows it; this pack converts it exactly with standard ONNX ops (see ``moe.py``).
``Dispatcher(packs=["no:transformers"])`` or ``TONNX_PACKS=no:transformers`` blocks it.
"""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

__version__ = "0.1.0"


def _load():
    from . import moe

    return list(moe.CONVERTERS)


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="transformers",
        load=_load,
        version=__version__,
        priority=100,
        description="transformers' own ops (transformers::grouped_mm_fallback for MoE experts)",
    )
