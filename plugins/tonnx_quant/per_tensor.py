"""Per-tensor quantize and dequantize (``quantized_decomposed``): PT2E's static and dynamic
activations, one scale and zero point for the whole tensor.

Constant parameters give ``QuantizeLinear``/``DequantizeLinear`` (the QDQ form runtimes fuse);
parameters computed at run time (``choose_qparams``) give torch's arithmetic, op for op
(see ``_qparams``).
"""

from __future__ import annotations

import numpy as np

from tonnx.converters import Converter, cast, named, onnx_type_from_torch

from ._qparams import (
    DOUBLE,
    FLOAT,
    check_bounds,
    constant,
    is_narrow,
    narrow_clip,
    narrow_clip_supported,
    qdq_accepts,
    quant_type,
    quantize_exact,
    reciprocal_f32,
    scalar,
    zero_point_as,
)
from ._qparams import _FLOAT8 as FLOAT8


def quantize_tensorwise(g, outputs, input, scale, zero_point, quant_min, quant_max, dtype) -> str:
    """torch: ``clamp(round(x * (1 / scale)) + zero_point, quant_min, quant_max).to(dtype)``."""
    elem = quant_type(dtype)
    check_bounds(quant_min, quant_max, dtype)
    x = cast(g, input, FLOAT)  # torch quantizes float16/bfloat16 in float32
    s, zp = constant(g, scale), constant(g, zero_point)
    if (s is not None and zp is not None and elem not in FLOAT8
            and qdq_accepts(g, "QuantizeLinear", elem)
            and narrow_clip_supported(quant_min, quant_max, dtype, elem)):
        zq = zero_point_as(zp.reshape(()), elem, ())
        if zq is not None:
            narrow = is_narrow(quant_min, quant_max, dtype)
            s32 = np.array(float(s.reshape(())), dtype=np.float32)
            if not narrow:
                return g.op.QuantizeLinear(x, s32, zq, outputs=outputs)
            return narrow_clip(g, g.op.QuantizeLinear(x, s32, zq), quant_min, quant_max, elem, outputs)
    return quantize_exact(g, x, reciprocal_f32(g, scale), scalar(g, zero_point), quant_min,
                          quant_max, elem, outputs)


def dequantize_tensorwise(g, outputs, input, scale, zero_point, dtype, out_dtype) -> str:
    """torch: ``(x.to(out_dtype) - zero_point) * scale`` with python scalars."""
    elem = quant_type(dtype)
    out = FLOAT if out_dtype is None else onnx_type_from_torch(out_dtype)
    s, zp = constant(g, scale), constant(g, zero_point)
    if s is not None and zp is not None and out == FLOAT and qdq_accepts(g, "DequantizeLinear", elem):
        zq = zero_point_as(zp.reshape(()), elem, ())
        if zq is not None:
            s32 = np.array(float(s.reshape(())), dtype=np.float32)
            return g.op.DequantizeLinear(input, s32, zq, outputs=outputs)
    opmath = DOUBLE if out == DOUBLE else FLOAT
    y = cast(g, cast(g, input, out), opmath)
    # torch casts the zero point to out_dtype (a tensor-typed scalar), the scale to opmath
    y = g.op.Sub(y, cast(g, scalar(g, zero_point, out), opmath))
    y = cast(g, cast(g, y, out), opmath)  # torch rounds the difference to out_dtype
    y = cast(g, g.op.Mul(y, scalar(g, scale, opmath)), out)
    return named(g, y, outputs[0])


def _bound(g, value) -> int:
    """A quant_min/quant_max given as a tensor (``.tensor2``) must be a constant."""
    known = constant(g, value)
    if known is None:
        from tonnx import UnsupportedError

        raise UnsupportedError(
            "quantize/dequantize_per_tensor.tensor2 with quant_min/quant_max computed at run "
            "time: tonnx needs them constant; pass python ints (the .tensor overload)."
        )
    return int(known.reshape(()))


# quantized_decomposed::quantize_per_tensor.default
def quantized_decomposed_quantize_per_tensor(g, sts, outputs, input, scale, zero_point, quant_min, quant_max, dtype):
    "quantize_per_tensor(Tensor input, float scale, int zero_point, int quant_min, int quant_max, ScalarType dtype) -> Tensor"  # noqa: E501
    return quantize_tensorwise(g, outputs, input, scale, zero_point, quant_min, quant_max, dtype)


# quantized_decomposed::quantize_per_tensor.tensor
def quantized_decomposed_quantize_per_tensor_tensor(g, sts, outputs, input, scale, zero_point, quant_min, quant_max, dtype):
    "quantize_per_tensor.tensor(Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, ScalarType dtype) -> Tensor"  # noqa: E501
    return quantize_tensorwise(g, outputs, input, scale, zero_point, quant_min, quant_max, dtype)


# quantized_decomposed::quantize_per_tensor.tensor2
def quantized_decomposed_quantize_per_tensor_tensor2(g, sts, outputs, input, scale, zero_point, quant_min, quant_max, dtype):
    "quantize_per_tensor.tensor2(Tensor input, Tensor scale, Tensor zero_point, Tensor quant_min, Tensor quant_max, ScalarType dtype) -> Tensor"  # noqa: E501
    return quantize_tensorwise(g, outputs, input, scale, zero_point, _bound(g, quant_min),
                               _bound(g, quant_max), dtype)


# quantized_decomposed::dequantize_per_tensor.default
def quantized_decomposed_dequantize_per_tensor(g, sts, outputs, input, scale, zero_point, quant_min, quant_max, dtype, out_dtype=None):
    "dequantize_per_tensor(Tensor input, float scale, int zero_point, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor"  # noqa: E501
    return dequantize_tensorwise(g, outputs, input, scale, zero_point, dtype, out_dtype)


# quantized_decomposed::dequantize_per_tensor.tensor
def quantized_decomposed_dequantize_per_tensor_tensor(g, sts, outputs, input, scale, zero_point, quant_min, quant_max, dtype, out_dtype=None):
    "dequantize_per_tensor.tensor(Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor"  # noqa: E501
    return dequantize_tensorwise(g, outputs, input, scale, zero_point, dtype, out_dtype)


# quantized_decomposed::dequantize_per_tensor.tensor2
def quantized_decomposed_dequantize_per_tensor_tensor2(g, sts, outputs, input, scale, zero_point, quant_min, quant_max, dtype, out_dtype=None):
    "dequantize_per_tensor.tensor2(Tensor input, Tensor scale, Tensor zero_point, Tensor quant_min, Tensor quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor"  # noqa: E501
    return dequantize_tensorwise(g, outputs, input, scale, zero_point, dtype, out_dtype)


CONVERTERS = (
    Converter("quantized_decomposed::quantize_per_tensor.default", quantized_decomposed_quantize_per_tensor),
    Converter("quantized_decomposed::quantize_per_tensor.tensor", quantized_decomposed_quantize_per_tensor_tensor),
    Converter("quantized_decomposed::quantize_per_tensor.tensor2", quantized_decomposed_quantize_per_tensor_tensor2),
    Converter("quantized_decomposed::dequantize_per_tensor.default", quantized_decomposed_dequantize_per_tensor),
    Converter("quantized_decomposed::dequantize_per_tensor.tensor", quantized_decomposed_dequantize_per_tensor_tensor),
    Converter("quantized_decomposed::dequantize_per_tensor.tensor2", quantized_decomposed_dequantize_per_tensor_tensor2),
)
