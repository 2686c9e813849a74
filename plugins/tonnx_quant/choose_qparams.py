"""Dynamic per-tensor quantization parameters (``quantized_decomposed::choose_qparams``):
the scale and zero point PT2E's dynamic configs compute from each activation at run time.

torch's arithmetic op for op (``torch.ao.quantization.utils.determine_qparams``), in float32;
the results are torch's: a float64 scale and an int64 zero point of shape [1]. torch refuses
an input holding NaN (its min/max check fails); the graph then gives NaN parameters.
"""

from __future__ import annotations

import numpy as np

from tonnx import UnsupportedError
from tonnx.converters import Converter

from ._qparams import DOUBLE, FLOAT, INT64, quant_type

_ONE = np.array([1], dtype=np.int64)


def _min_max(g, input) -> tuple[str, str]:
    """``torch.aminmax(input)`` widened to include 0 (min_val_neg, max_val_pos)."""
    if g.get_type(input) != FLOAT:
        raise UnsupportedError(
            "choose_qparams on a float16/bfloat16 input: tonnx converts float32 activations "
            "(torch's arithmetic in the half type is not reproduced); export in float32."
        )
    zero = np.array(0.0, dtype=np.float32)
    low = g.op.Min(g.op.ReduceMin(input, keepdims=0), zero)
    high = g.op.Max(g.op.ReduceMax(input, keepdims=0), zero)
    return low, high


def _results(g, outputs, scale: str, zero_point: str) -> tuple[str, str]:
    s = g.op.Cast(g.op.Reshape(scale, _ONE), to=DOUBLE, outputs=[outputs[0]]) if outputs[0] else ""
    z = g.op.Cast(g.op.Reshape(zero_point, _ONE), to=INT64, outputs=[outputs[1]]) if outputs[1] else ""
    return s, z


# quantized_decomposed::choose_qparams.tensor
def quantized_decomposed_choose_qparams_tensor(g, sts, outputs, input, quant_min, quant_max, eps, dtype):
    "choose_qparams.tensor(Tensor input, int quant_min, int quant_max, float eps, ScalarType dtype) -> (Tensor, Tensor)"  # noqa: E501
    quant_type(dtype)
    low, high = _min_max(g, input)
    span = g.op.Sub(high, low)
    scale = g.op.Div(span, np.array(float(quant_max - quant_min), dtype=np.float32))
    scale = g.op.Max(scale, np.array(eps, dtype=np.float32))
    zero_point = g.op.Sub(np.array(quant_min, dtype=np.float32), g.op.Round(g.op.Div(low, scale)))
    zero_point = g.op.Clip(zero_point, np.array(quant_min, np.float32), np.array(quant_max, np.float32))
    return _results(g, outputs, scale, zero_point)


# quantized_decomposed::choose_qparams_symmetric.tensor
def quantized_decomposed_choose_qparams_symmetric_tensor(g, sts, outputs, input, quant_min, quant_max, eps, dtype):
    "choose_qparams_symmetric.tensor(Tensor input, int quant_min, int quant_max, float eps, ScalarType dtype) -> (Tensor, Tensor)"  # noqa: E501
    import torch

    quant_type(dtype)
    low, high = _min_max(g, input)
    high = g.op.Max(g.op.Neg(low), high)
    scale = g.op.Div(high, np.array(float(quant_max - quant_min) / 2, dtype=np.float32))
    scale = g.op.Max(scale, np.array(eps, dtype=np.float32))
    middle = 128 if dtype == torch.uint8 else 0  # torch: 128 for uint8 (full range), else 0
    zero_point = g.make_initializer("", np.array(middle, dtype=np.int64))
    return _results(g, outputs, scale, zero_point)


CONVERTERS = (
    Converter("quantized_decomposed::choose_qparams.tensor", quantized_decomposed_choose_qparams_tensor),
    Converter("quantized_decomposed::choose_qparams_symmetric.tensor", quantized_decomposed_choose_qparams_symmetric_tensor),
)
