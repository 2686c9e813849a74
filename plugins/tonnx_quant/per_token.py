"""Per-token quantization (``quantized_decomposed``): one scale (and zero point) per row of
the last dimension, computed at run time, as in torchao's 8-bit dynamic activations.

torch's arithmetic op for op, in the dtypes torch promotes to (a float64 scale makes the
product float64); no runtime fuses this form, so nothing is lost by being exact.
"""

from __future__ import annotations

import numpy as np

from tonnx import UnsupportedError
from tonnx.converters import Converter, cast, torch_dtype

from ._qparams import reciprocal, DOUBLE, FLOAT, FLOAT16, INT64, check_bounds, dequantize_exact, promoted, quant_type

_LAST = np.array([-1], dtype=np.int64)


def _float32_input(g, input, op: str) -> str:
    elem = g.get_type(input)
    if elem == FLOAT16:
        return input
    if elem != FLOAT:
        raise UnsupportedError(
            f"{op} on a {torch_dtype(elem)} input: tonnx converts float32 and float16 "
            f"activations (torch's bfloat16 arithmetic is not reproduced); export in float32."
        )
    return input


# quantized_decomposed::choose_qparams_per_token.default
def quantized_decomposed_choose_qparams_per_token(g, sts, outputs, input, dtype):
    "choose_qparams_per_token(Tensor input, ScalarType dtype) -> (Tensor, Tensor)"
    import torch

    if dtype != torch.int8:
        raise UnsupportedError(f"choose_qparams_per_token for {dtype}: torch supports int8 only.")
    x = _float32_input(g, input, "choose_qparams_per_token")
    # torch: abs().amax(-1, keepdim) (float16 widened after), clamp(min=1e-5), / 127
    scales = cast(g, g.op.ReduceMax(g.op.Abs(x), _LAST, keepdims=1), FLOAT)
    scales = g.op.Max(scales, np.array(1e-5, dtype=np.float32))
    scales = g.op.Div(scales, np.array(127.0, dtype=np.float32))
    s = g.op.Cast(scales, to=DOUBLE, outputs=[outputs[0]]) if outputs[0] else ""
    zeros = g.op.Expand(np.array(0, dtype=np.int64), g.op.Shape(scales))
    z = g.op.Identity(zeros, outputs=[outputs[1]]) if outputs[1] else ""
    return s, z


# quantized_decomposed::choose_qparams_per_token_asymmetric.default
def quantized_decomposed_choose_qparams_per_token_asymmetric(g, sts, outputs, input, dtype):
    "choose_qparams_per_token_asymmetric(Tensor input, ScalarType dtype) -> (Tensor, Tensor)"
    if g.get_type(input) != FLOAT:
        raise UnsupportedError(
            "choose_qparams_per_token_asymmetric on a non-float32 input: tonnx converts float32 "
            "activations; export in float32."
        )
    f32 = np.float32
    qmin, qmax = -128.0, 127.0  # torch's (XNNPACK's) fixed range, whatever dtype says
    low = g.op.Min(g.op.ReduceMin(input, _LAST, keepdims=1), f32(0.0))
    high = g.op.Max(g.op.ReduceMax(input, _LAST, keepdims=1), f32(0.0))
    scale = g.op.Div(g.op.Sub(high, low), f32(qmax - qmin))
    scale = g.op.Max(scale, f32(np.finfo(np.float32).eps))
    low_d, high_d = g.op.Div(low, scale), g.op.Div(high, scale)
    from_min, from_max = g.op.Add(f32(qmin), low_d), g.op.Add(f32(qmax), high_d)
    use_min = g.op.Greater(g.op.Add(from_min, from_max), f32(0.0))
    zero_point = g.op.Where(use_min, g.op.Sub(f32(qmin), low_d), g.op.Sub(f32(qmax), high_d))
    zero_point = g.op.Round(g.op.Clip(zero_point, f32(qmin), f32(qmax)))
    s = g.op.Cast(scale, to=DOUBLE, outputs=[outputs[0]]) if outputs[0] else ""
    z = g.op.Cast(zero_point, to=INT64, outputs=[outputs[1]]) if outputs[1] else ""
    return s, z


# quantized_decomposed::quantize_per_token.default
def quantized_decomposed_quantize_per_token(g, sts, outputs, input, scales, zero_points, quant_min, quant_max, dtype):
    "quantize_per_token(Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, ScalarType dtype) -> Tensor"  # noqa: E501
    elem = quant_type(dtype)
    check_bounds(quant_min, quant_max, dtype)
    # torch: input.mul(1.0 / scales).add(zero_points).round().clamp(quant_min, quant_max).to(dtype)
    scale_elem = g.get_type(scales)
    compute = promoted(torch_dtype(g.get_type(input)), torch_dtype(scale_elem))
    compute = promoted(torch_dtype(compute), torch_dtype(g.get_type(zero_points)))
    inv = reciprocal(g, scales)
    y = g.op.Mul(cast(g, input, compute), cast(g, inv, compute))
    y = g.op.Round(g.op.Add(y, cast(g, zero_points, compute)))
    kind = np.float64 if compute == DOUBLE else np.float32
    if compute not in (FLOAT, DOUBLE):
        y = cast(g, y, FLOAT)
        kind = np.float32
    y = g.op.Clip(y, np.array(quant_min, kind), np.array(quant_max, kind))
    return g.op.Cast(y, to=elem, outputs=outputs)


# quantized_decomposed::dequantize_per_token.default
def quantized_decomposed_dequantize_per_token(g, sts, outputs, input, scales, zero_points, quant_min, quant_max, dtype, output_dtype):
    "dequantize_per_token(Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, ScalarType dtype, ScalarType output_dtype) -> Tensor"  # noqa: E501
    quant_type(dtype)
    return dequantize_exact(g, input, scales, zero_points, sts.dtype, outputs)


CONVERTERS = (
    Converter("quantized_decomposed::choose_qparams_per_token.default", quantized_decomposed_choose_qparams_per_token),
    Converter("quantized_decomposed::choose_qparams_per_token_asymmetric.default",
              quantized_decomposed_choose_qparams_per_token_asymmetric),
    Converter("quantized_decomposed::quantize_per_token.default", quantized_decomposed_quantize_per_token),
    Converter("quantized_decomposed::dequantize_per_token.default", quantized_decomposed_dequantize_per_token),
)
