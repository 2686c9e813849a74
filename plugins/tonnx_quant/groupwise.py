"""Group-wise quantization of 2-D weights (``quantized_decomposed``): one scale (and zero
point) per ``group_size`` consecutive elements of a row, as in 4-bit weight-only schemes.

torch's arithmetic op for op on the rows reshaped to ``(-1, group_size)``; int4 values are
held in int8 tensors by these ops (torch has no int4 dtype here).
"""

from __future__ import annotations

import numpy as np

from tonnx import UnsupportedError
from tonnx.converters import Converter, cast, torch_dtype

from ._qparams import reciprocal, DOUBLE, FLOAT, check_bounds, dequantize_exact, promoted, quant_type

_COLUMN = np.array([-1, 1], dtype=np.int64)


def _group_size(g, input, scales, group_size: int) -> int:
    shape = g.get_shape(input)
    if len(shape) != 2 or type(shape[1]) is not int:
        raise UnsupportedError("per-channel-group (de)quantization of a tensor that is not 2-D with a static row length (torch requires 2-D).")
    if group_size > shape[1] and g.get_shape(scales)[-1:] == (1,):
        return shape[1]  # torch: GPTQ's single-column case
    if group_size <= 1 or shape[1] % group_size:
        raise UnsupportedError(f"group_size={group_size} does not divide the rows of length {shape[1]} (torch refuses it too).")
    return group_size


# quantized_decomposed::quantize_per_channel_group.default
def quantized_decomposed_quantize_per_channel_group(g, sts, outputs, input, scales, zero_points, quant_min, quant_max, dtype, group_size=128):
    "quantize_per_channel_group(Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, ScalarType dtype, int group_size) -> Tensor"  # noqa: E501
    elem = quant_type(dtype)
    check_bounds(quant_min, quant_max, dtype)
    size = _group_size(g, input, scales, group_size)
    rows = g.op.Reshape(input, np.array([-1, size], dtype=np.int64))
    # torch: rows.mul(1.0 / scales).add(zero_points).round().clamp_(quant_min, quant_max).to(dtype)
    compute = promoted(torch_dtype(g.get_type(input)), torch_dtype(g.get_type(scales)))
    compute = promoted(torch_dtype(compute), torch_dtype(g.get_type(zero_points)))
    inv = reciprocal(g, g.op.Reshape(scales, _COLUMN))
    y = g.op.Mul(cast(g, rows, compute), cast(g, inv, compute))
    y = g.op.Round(g.op.Add(y, cast(g, g.op.Reshape(zero_points, _COLUMN), compute)))
    if compute not in (FLOAT, DOUBLE):
        y, compute = cast(g, y, FLOAT), FLOAT
    kind = np.float64 if compute == DOUBLE else np.float32
    y = g.op.Cast(g.op.Clip(y, np.array(quant_min, kind), np.array(quant_max, kind)), to=elem)
    return g.op.Reshape(y, g.op.Shape(input), outputs=outputs)


# quantized_decomposed::dequantize_per_channel_group.default
def quantized_decomposed_dequantize_per_channel_group(g, sts, outputs, input, scales, zero_points, quant_min, quant_max, dtype, group_size=128, output_dtype=None):
    "dequantize_per_channel_group(Tensor input, Tensor scales, Tensor? zero_points, int quant_min, int quant_max, ScalarType dtype, int group_size, ScalarType output_dtype) -> Tensor"  # noqa: E501
    quant_type(dtype)
    size = _group_size(g, input, scales, group_size)
    rows = g.op.Reshape(input, np.array([-1, size], dtype=np.int64))
    scales = g.op.Reshape(scales, _COLUMN)
    if zero_points is not None:
        zero_points = g.op.Reshape(zero_points, _COLUMN)
    else:  # torch subtracts an int32 zero
        zero_points = g.make_initializer("", np.array(0, dtype=np.int32))
    y = dequantize_exact(g, rows, scales, zero_points, sts.dtype, None)
    return g.op.Reshape(y, g.op.Shape(input), outputs=outputs)


CONVERTERS = (
    Converter("quantized_decomposed::quantize_per_channel_group.default", quantized_decomposed_quantize_per_channel_group),
    Converter("quantized_decomposed::dequantize_per_channel_group.default", quantized_decomposed_dequantize_per_channel_group),
)
