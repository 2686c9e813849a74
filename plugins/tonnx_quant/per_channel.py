"""Per-channel quantize and dequantize (``quantized_decomposed``): PT2E's weights, one scale
and zero point per slice along ``axis``.

Constant float32 parameters give ``QuantizeLinear``/``DequantizeLinear`` with ``axis``;
float64 scales (torch then computes in float64) or run-time parameters give torch's
arithmetic (see ``_qparams``).
"""

from __future__ import annotations

import numpy as np

from tonnx.converters import Converter, cast, onnx_type_from_torch, torch_dtype

from ._four_bit import per_row_transposed_blocks
from ._qparams import (
    _FLOAT8,
    FLOAT,
    as_float32_scale,
    check_bounds,
    constant,
    dequantize_exact,
    is_narrow,
    narrow_clip,
    narrow_clip_supported,
    promoted,
    qdq_accepts,
    quant_type,
    reciprocal,
    zero_point_as,
)
from .int8_weight import BLOCK


def _axis_shape(rank: int, axis: int) -> list[int]:
    shape = [1] * rank
    shape[axis] = -1
    return shape


# quantized_decomposed::quantize_per_channel.default
def quantized_decomposed_quantize_per_channel(g, sts, outputs, input, scales, zero_points, axis, quant_min, quant_max, dtype):
    "quantize_per_channel(Tensor input, Tensor scales, Tensor zero_points, int axis, int quant_min, int quant_max, ScalarType dtype) -> Tensor"  # noqa: E501
    elem = quant_type(dtype)
    check_bounds(quant_min, quant_max, dtype)
    x = cast(g, input, FLOAT)
    rank = g.get_rank(x)
    axis = axis % rank
    s, zp = constant(g, scales), constant(g, zero_points)
    if (s is not None and zp is not None and s.dtype == np.float32 and elem not in _FLOAT8
            and qdq_accepts(g, "QuantizeLinear", elem)
            and narrow_clip_supported(quant_min, quant_max, dtype, elem)):
        zq = zero_point_as(zp, elem, zp.shape)
        if zq is not None:
            narrow = is_narrow(quant_min, quant_max, dtype)
            if not narrow:
                return g.op.QuantizeLinear(x, s, zq, axis=axis, outputs=outputs)
            return narrow_clip(g, g.op.QuantizeLinear(x, s, zq, axis=axis), quant_min, quant_max, elem, outputs)
    # torch: clamp(round(x * (1.0 / scales)) + zero_points, quant_min, quant_max).to(dtype)
    shape = np.array(_axis_shape(rank, axis), dtype=np.int64)
    scale_elem = g.get_type(scales)
    compute = promoted(torch_dtype(FLOAT), torch_dtype(scale_elem))
    inv = reciprocal(g, g.op.Reshape(scales, shape))
    y = g.op.Round(g.op.Mul(cast(g, x, compute), cast(g, inv, compute)))
    y = g.op.Add(y, cast(g, g.op.Reshape(zero_points, shape), compute))
    kind = np.float64 if compute != FLOAT else np.float32
    y = g.op.Clip(y, np.array(quant_min, kind), np.array(quant_max, kind))
    return g.op.Cast(y, to=elem, outputs=outputs)


# quantized_decomposed::dequantize_per_channel.default
def quantized_decomposed_dequantize_per_channel(g, sts, outputs, input, scales, zero_points, axis, quant_min, quant_max, dtype, out_dtype=None):
    "dequantize_per_channel(Tensor input, Tensor scales, Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor"  # noqa: E501
    elem = quant_type(dtype)
    check_bounds(quant_min, quant_max, dtype)
    out = FLOAT if out_dtype is None else onnx_type_from_torch(out_dtype)
    rank = g.get_rank(input)
    axis = axis % rank
    s, zp = constant(g, scales), constant(g, zero_points)
    if s is not None and (zero_points is None or zp is not None) and qdq_accepts(g, "DequantizeLinear", elem):
        s32 = as_float32_scale(s) if (out == FLOAT or s.dtype == np.float32) else None
        zq = zero_point_as(zp, elem, s.shape)
        if s32 is not None and zq is not None:
            if out == FLOAT:
                return g.op.DequantizeLinear(input, s32, zq, axis=axis, outputs=outputs)
            return g.op.Cast(g.op.DequantizeLinear(input, s32, zq, axis=axis), to=out, outputs=outputs)
    # torch: ((x - zero_points) * scales).to(out_dtype), the parameters along axis
    return dequantize_exact(g, input, scales, zero_points, out, outputs, shape=_axis_shape(rank, axis))


def _weight_of_linears(node) -> bool:
    """The dequantized tensor is the weight (a 2-D tensor's rows, axis 0) of linears whose
    input is not a static dequantize: PT2E weight-only and dynamic schemes."""
    from .dequantized_linear import reads_weight_of_linear

    val = getattr(node.args[0], "meta", {}).get("val")
    if val is None or val.dim() != 2 or node.args[3] % 2 != 0 or not node.users:  # axis 0 (or -2)
        return False
    return all(reads_weight_of_linear(user, node) for user in node.users)


# quantized_decomposed::dequantize_per_channel.default
def quantized_decomposed_dequantize_per_channel_weight(g, sts, outputs, input, scales, zero_points, axis, quant_min, quant_max, dtype, out_dtype=None):  # noqa: E501
    "dequantize_per_channel(Tensor input, Tensor scales, Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor"  # noqa: E501
    w, s = constant(g, input), constant(g, scales)
    zp = np.zeros((), np.int64) if zero_points is None else constant(g, zero_points)
    if not _blockable(g, w, s, zp, out_dtype):
        return quantized_decomposed_dequantize_per_channel(g, sts, outputs, input, scales, zero_points, axis, quant_min,
                                                           quant_max, dtype, out_dtype)
    elem = g.get_type(input)  # INT8 or UINT8, stored as it is
    return per_row_transposed_blocks(g, outputs, input, w, s, zp, BLOCK, elem)


def _blockable(g, w, s, zp, out_dtype) -> bool:
    """A constant int8/uint8 weight with float32 scales and zero points in its range, to
    float32, from opset 21 (blocked DequantizeLinear)."""
    if (g.main_opset < 21 or w is None or s is None or zp is None or w.dtype not in (np.int8, np.uint8)
            or s.dtype != np.float32 or out_dtype not in (None, torch_dtype(FLOAT))):
        return False
    info = np.iinfo(w.dtype)
    return not (np.any(zp < info.min) or np.any(zp > info.max))


CONVERTERS = (
    Converter("quantized_decomposed::dequantize_per_channel.default", quantized_decomposed_dequantize_per_channel_weight,
              applies=_weight_of_linears, priority=110),
    Converter("quantized_decomposed::quantize_per_channel.default", quantized_decomposed_quantize_per_channel),
    Converter("quantized_decomposed::dequantize_per_channel.default", quantized_decomposed_dequantize_per_channel),
)
