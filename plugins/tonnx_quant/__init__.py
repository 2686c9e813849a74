"""tonnx's quantization pack: models quantized in PyTorch (PT2E post-training quantization,
QAT, torchao) to ONNX's QuantizeLinear/DequantizeLinear, with integer weights.

The ``quantized_decomposed`` ops are torch's own and always converted; torchao's
(``torchao::quantize_affine`` and its family) are added when torchao is importable
(docs/quantization.md).
"""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

__version__ = "0.1.0"


def _load():
    from ._table import converters

    return converters()


def _rewrites():
    from .unsigned_matmul import REWRITES

    return REWRITES


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="quant",
        load=_load,
        rewrites=_rewrites,
        version=__version__,
        priority=100,
        description="quantized models (quantized_decomposed, torchao) to QuantizeLinear/DequantizeLinear",
    )
