"""Unary math and activation functions.

A function of one ONNX op computes in the result dtype (``sts.dtype``: an integer input
of a float function is cast first). A formula of several ops computes like torch's CPU
kernels: float16/bfloat16 in float32 ("opmath"), rounded once at the end, with the
constants and the order of operations of torch's kernels. ``expm1``/``log1p`` (no ONNX
op) use Kahan's formulas, accurate to a few ulps where ``exp(x) - 1`` is not.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import (
    cast,
    is_float,
    named,
    numpy_dtype,
    op_accepts,
    opmath_type,
    torch_dtype,
    trunc,
)

DOUBLE = TensorProto.DOUBLE
BOOL = TensorProto.BOOL
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# -- helpers ----------------------------------------------------------------------------------


def _const(value, elem: int) -> np.ndarray:
    return np.array(value, dtype=numpy_dtype(elem))


def _single(g, sts, outputs, op_type: str, self, **attributes) -> str:
    """One ONNX op on the input cast to the result dtype.

    A float16/bfloat16 input the op does not accept at the target opset (``Sin`` takes
    bfloat16 from opset 22) goes through float32, which is what torch computes in.
    """
    elem = sts.dtype
    if op_accepts(g, op_type, elem):
        return g.make_node(op_type, [cast(g, self, elem)], outputs, **attributes)
    compute = opmath_type(elem)
    if compute == elem:
        raise UnsupportedError(f"ONNX {op_type} (opset {g.main_opset}) has no input type {elem}.")
    result = g.make_node(op_type, [cast(g, self, compute)], **attributes)
    return g.op.Cast(result, to=elem, outputs=outputs)


def _is_inf(g, x: str, outputs=1, **attributes) -> str:
    """IsInf, through float32 for float16/bfloat16 before opset 20 (exact)."""
    if not op_accepts(g, "IsInf", g.get_type(x)):
        x = cast(g, x, TensorProto.FLOAT)
    return g.op.IsInf(x, outputs=outputs, **attributes)


def _opmath_input(g, sts, self) -> str:
    """The input in the type torch computes formulas in (float32 for float16/bfloat16)."""
    return cast(g, self, opmath_type(sts.dtype))


def _result(g, x: str, elem: int, outputs) -> str:
    """``x`` as the op's result, cast back to ``elem`` when computed in float32."""
    if g.get_type(x) == elem:
        return named(g, x, outputs[0]) if type(outputs) is list else x
    return g.op.Cast(x, to=elem, outputs=outputs)


def _expm1(g, x: str) -> str:
    """exp(x) - 1 without cancellation: (u - 1) * x / log(u) with u = exp(x) (Kahan)."""
    u = g.op.Exp(x)
    um1 = g.op.Sub(u, 1)
    r = g.op.Div(g.op.Mul(um1, x), g.op.Log(u))
    r = g.op.Where(g.op.Equal(um1, -1), um1, r)
    r = g.op.Where(g.op.Equal(u, 1), x, r)
    return g.op.Where(_is_inf(g, u), u, r)


def _log1p(g, x: str) -> str:
    """log(1 + x) without cancellation: log(u) * x / (u - 1) with u = 1 + x (Kahan)."""
    u = g.op.Add(x, 1)
    r = g.op.Mul(g.op.Log(u), g.op.Div(x, g.op.Sub(u, 1)))
    r = g.op.Where(g.op.Equal(u, 1), x, r)
    return g.op.Where(_is_inf(g, x, detect_negative=0), x, r)


def _clip(g, x: str, lo, hi, outputs=1) -> str:
    elem = g.get_type(x)
    return g.op.Clip(x, _const(lo, elem), _const(hi, elem), outputs=outputs)


# -- single ONNX ops ---------------------------------------------------------------------------


# aten::abs.default
def aten_abs(g, sts, outputs, self):
    "abs(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Abs", self)


# aten::neg.default
def aten_neg(g, sts, outputs, self):
    "neg(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Neg", self)


# aten::sqrt.default
def aten_sqrt(g, sts, outputs, self):
    "sqrt(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Sqrt", self)


# aten::reciprocal.default
def aten_reciprocal(g, sts, outputs, self):
    "reciprocal(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Reciprocal", self)


# aten::exp.default
def aten_exp(g, sts, outputs, self):
    "exp(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Exp", self)


# aten::log.default
def aten_log(g, sts, outputs, self):
    "log(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Log", self)


# aten::sin.default
def aten_sin(g, sts, outputs, self):
    "sin(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Sin", self)


# aten::cos.default
def aten_cos(g, sts, outputs, self):
    "cos(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Cos", self)


# aten::tan.default
def aten_tan(g, sts, outputs, self):
    "tan(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Tan", self)


# aten::asin.default
def aten_asin(g, sts, outputs, self):
    "asin(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Asin", self)


# aten::acos.default
def aten_acos(g, sts, outputs, self):
    "acos(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Acos", self)


# aten::atan.default
def aten_atan(g, sts, outputs, self):
    "atan(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Atan", self)


# aten::sinh.default
def aten_sinh(g, sts, outputs, self):
    "sinh(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Sinh", self)


# aten::cosh.default
def aten_cosh(g, sts, outputs, self):
    "cosh(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Cosh", self)


# aten::tanh.default
def aten_tanh(g, sts, outputs, self):
    "tanh(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Tanh", self)


# aten::asinh.default
def aten_asinh(g, sts, outputs, self):
    "asinh(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Asinh", self)


# aten::acosh.default
def aten_acosh(g, sts, outputs, self):
    "acosh(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Acosh", self)


# aten::atanh.default
def aten_atanh(g, sts, outputs, self):
    "atanh(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Atanh", self)


# aten::erf.default
def aten_erf(g, sts, outputs, self):
    "erf(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Erf", self)


# aten::sigmoid.default
def aten_sigmoid(g, sts, outputs, self):
    "sigmoid(Tensor self) -> Tensor"
    return _single(g, sts, outputs, "Sigmoid", self)


# aten::square.default
def aten_square(g, sts, outputs, self):
    "square(Tensor self) -> Tensor"
    x = cast(g, self, sts.dtype)
    return g.op.Mul(x, x, outputs=outputs)


# aten::relu.default
def aten_relu(g, sts, outputs, self):
    "relu(Tensor self) -> Tensor"
    if is_float(sts.dtype):
        return _single(g, sts, outputs, "Relu", self)
    # onnxruntime has no int64 Relu
    return g.op.Max(self, _const(0, sts.dtype), outputs=outputs)


# aten::sign.default
def aten_sign(g, sts, outputs, self):
    "sign(Tensor self) -> Tensor"
    elem = sts.dtype
    if elem == BOOL:
        return self
    if not is_float(elem):
        return _single(g, sts, outputs, "Sign", self)
    # torch's sign is (0 < x) - (x < 0): 0 for nan, where ONNX Sign gives nan
    x = cast(g, self, elem)
    return g.op.Where(g.op.IsNaN(x), _const(0, elem), g.op.Sign(x), outputs=outputs)


# -- formulas -------------------------------------------------------------------------------------


# aten::rsqrt.default
def aten_rsqrt(g, sts, outputs, self):
    "rsqrt(Tensor self) -> Tensor"
    x = _opmath_input(g, sts, self)
    return _result(g, g.op.Reciprocal(g.op.Sqrt(x)), sts.dtype, outputs)


# aten::exp2.default
def aten_exp2(g, sts, outputs, self):
    "exp2(Tensor self) -> Tensor"
    x = _opmath_input(g, sts, self)
    return _result(g, g.op.Pow(_const(2, g.get_type(x)), x), sts.dtype, outputs)


# aten::expm1.default
def aten_expm1(g, sts, outputs, self):
    "expm1(Tensor self) -> Tensor"
    return _result(g, _expm1(g, _opmath_input(g, sts, self)), sts.dtype, outputs)


# aten::log1p.default
def aten_log1p(g, sts, outputs, self):
    "log1p(Tensor self) -> Tensor"
    return _result(g, _log1p(g, _opmath_input(g, sts, self)), sts.dtype, outputs)


def _log_base(g, sts, outputs, self, base: int) -> str:
    """log(x) / log(base) in double, so exact powers of ``base`` give exact integers."""
    elem = sts.dtype
    x = cast(g, self, DOUBLE)
    r = g.op.Div(g.op.Log(x), _const(math.log(base), DOUBLE))
    if elem == DOUBLE:
        # double has no wider type: snap results that are exact powers of the base
        n = g.op.Round(r)
        r = g.op.Where(g.op.Equal(g.op.Pow(_const(base, DOUBLE), n), x), n, r)
    return _result(g, r, elem, outputs)


# aten::log2.default
def aten_log2(g, sts, outputs, self):
    "log2(Tensor self) -> Tensor"
    return _log_base(g, sts, outputs, self, 2)


# aten::log10.default
def aten_log10(g, sts, outputs, self):
    "log10(Tensor self) -> Tensor"
    return _log_base(g, sts, outputs, self, 10)


# -- rounding and classification ------------------------------------------------------------------


def _rounding(g, sts, outputs, op_type: str, self) -> str:
    if not is_float(sts.dtype):
        return self  # integers are already integral
    return _single(g, sts, outputs, op_type, self)


# aten::ceil.default
def aten_ceil(g, sts, outputs, self):
    "ceil(Tensor self) -> Tensor"
    return _rounding(g, sts, outputs, "Ceil", self)


# aten::floor.default
def aten_floor(g, sts, outputs, self):
    "floor(Tensor self) -> Tensor"
    return _rounding(g, sts, outputs, "Floor", self)


# aten::round.default
def aten_round(g, sts, outputs, self):
    "round(Tensor self) -> Tensor"
    return _rounding(g, sts, outputs, "Round", self)  # half to even, as torch


# aten::round.decimals
def aten_round_decimals(g, sts, outputs, self, decimals):
    "round.decimals(Tensor self, *, int decimals) -> Tensor"
    if decimals == 0:
        return aten_round(g, sts, outputs, self)
    if not is_float(sts.dtype):
        raise UnsupportedError("round with decimals of an integer tensor (torch raises).")
    x = _opmath_input(g, sts, self)
    scale = _const(10.0 ** abs(decimals), g.get_type(x))
    if decimals < 0:
        r = g.op.Mul(g.op.Round(g.op.Div(x, scale)), scale)
    else:
        r = g.op.Div(g.op.Round(g.op.Mul(x, scale)), scale)
    return _result(g, r, sts.dtype, outputs)


# aten::trunc.default
def aten_trunc(g, sts, outputs, self):
    "trunc(Tensor self) -> Tensor"
    if not is_float(sts.dtype):
        return self
    return g.op.Identity(trunc(g, self), outputs=outputs)


# aten::frac.default
def aten_frac(g, sts, outputs, self):
    "frac(Tensor self) -> Tensor"
    return g.op.Sub(self, trunc(g, self), outputs=outputs)


def _all(g, self, value: bool, outputs) -> str:
    """A bool tensor of the input's shape filled with ``value`` (integers: never nan/inf)."""
    same = g.op.Equal(self, self)
    return g.op.Identity(same, outputs=outputs) if value else g.op.Not(same, outputs=outputs)


# aten::isnan.default
def aten_isnan(g, sts, outputs, self):
    "isnan(Tensor self) -> Tensor"
    if not is_float(g.get_type(self)):
        return _all(g, self, False, outputs)
    return g.op.IsNaN(self, outputs=outputs)


# aten::isinf.default
def aten_isinf(g, sts, outputs, self):
    "isinf(Tensor self) -> Tensor"
    if not is_float(g.get_type(self)):
        return _all(g, self, False, outputs)
    return _is_inf(g, self, outputs=outputs)


# aten::isfinite.default
def aten_isfinite(g, sts, outputs, self):
    "isfinite(Tensor self) -> Tensor"
    if not is_float(g.get_type(self)):
        return _all(g, self, True, outputs)
    # x - x is nan exactly when x is nan or infinite
    return g.op.Not(g.op.IsNaN(g.op.Sub(self, self)), outputs=outputs)


# aten::nan_to_num.default
def aten_nan_to_num(g, sts, outputs, self, nan=None, posinf=None, neginf=None):
    "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor"
    import torch

    elem = sts.dtype
    if not is_float(elem):
        return self
    info = torch.finfo(torch_dtype(elem))
    x = g.op.Where(g.op.IsNaN(self), _const(0.0 if nan is None else nan, elem), self)
    big = _const(info.max if posinf is None else posinf, elem)
    x = g.op.Where(_is_inf(g, x, detect_negative=0), big, x)
    small = _const(info.min if neginf is None else neginf, elem)
    return g.op.Where(_is_inf(g, x, detect_positive=0), small, x, outputs=outputs)


# -- activations ----------------------------------------------------------------------------------


# aten::hardtanh.default
def aten_hardtanh(g, sts, outputs, self, min_val=-1, max_val=1):
    "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor"
    return _clip(g, cast(g, self, sts.dtype), min_val, max_val, outputs)


# aten::relu6.default
def aten_relu6(g, sts, outputs, self):
    "relu6(Tensor self) -> Tensor"
    return _clip(g, cast(g, self, sts.dtype), 0, 6, outputs)


# aten::threshold.default
def aten_threshold(g, sts, outputs, self, threshold, value):
    "threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor"
    elem = sts.dtype
    x = cast(g, self, elem)
    below = g.op.LessOrEqual(x, _const(threshold, elem))
    return g.op.Where(below, _const(value, elem), x, outputs=outputs)


# aten::leaky_relu.default
def aten_leaky_relu(g, sts, outputs, self, negative_slope=0.01):
    "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor"
    x = _opmath_input(g, sts, self)
    slope = _const(negative_slope, g.get_type(x))
    r = g.op.Where(g.op.Greater(x, 0), x, g.op.Mul(x, slope))
    return _result(g, r, sts.dtype, outputs)


def _elu(g, sts, outputs, self, alpha, scale, input_scale) -> str:
    """x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale (torch's elu kernel)."""
    x = _opmath_input(g, sts, self)
    compute = g.get_type(x)
    positive = x if scale == 1 else g.op.Mul(x, _const(scale, compute))
    inner = x if input_scale == 1 else g.op.Mul(x, _const(input_scale, compute))
    negcoef = _const(alpha, compute) * _const(scale, compute)
    negative = g.op.Mul(_expm1(g, inner), negcoef)
    return _result(g, g.op.Where(g.op.Greater(x, 0), positive, negative), sts.dtype, outputs)


# aten::elu.default
def aten_elu(g, sts, outputs, self, alpha=1, scale=1, input_scale=1):
    "elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor"
    return _elu(g, sts, outputs, self, alpha, scale, input_scale)


# aten::celu.default
def aten_celu(g, sts, outputs, self, alpha=1.0):
    "celu(Tensor self, Scalar alpha=1.) -> Tensor"
    return _elu(g, sts, outputs, self, alpha, 1.0, 1.0 / float(alpha))


# aten::selu.default
def aten_selu(g, sts, outputs, self):
    "selu(Tensor self) -> Tensor"
    return _elu(g, sts, outputs, self, SELU_ALPHA, SELU_SCALE, 1)


def _gelu_formula(g, x: str, approximate: str) -> str:
    """GELU before opset 20, spelled as the patterns onnxruntime fuses into one Gelu kernel."""
    if approximate == "none":
        # x * (1 + erf(x / sqrt(2))) * 0.5
        erf = g.op.Erf(g.op.Div(x, math.sqrt(2.0)))
        return g.op.Mul(g.op.Mul(x, g.op.Add(erf, 1)), 0.5)
    if approximate != "tanh":
        raise UnsupportedError(f"gelu with approximate={approximate!r}.")
    # x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))
    cube = g.op.Pow(x, 3)
    inner = g.op.Mul(g.op.Add(x, g.op.Mul(cube, 0.044715)), math.sqrt(2.0 / math.pi))
    return g.op.Mul(g.op.Mul(x, 0.5), g.op.Add(g.op.Tanh(inner), 1))


# aten::gelu.default
def aten_gelu(g, sts, outputs, self, approximate="none"):
    'gelu(Tensor self, *, str approximate="none") -> Tensor'
    x = _opmath_input(g, sts, self)
    return _result(g, _gelu_formula(g, x, approximate), sts.dtype, outputs)


# aten::gelu.default
def aten_gelu_20(g, sts, outputs, self, approximate="none"):
    'gelu(Tensor self, *, str approximate="none") -> Tensor'
    if approximate not in ("none", "tanh"):
        raise UnsupportedError(f"gelu with approximate={approximate!r}.")
    return _single(g, sts, outputs, "Gelu", self, approximate=approximate)


# aten::silu.default
def aten_silu(g, sts, outputs, self):
    "silu(Tensor self) -> Tensor"
    # x * sigmoid(x): onnxruntime fuses the pair into one kernel
    x = _opmath_input(g, sts, self)
    return _result(g, g.op.Mul(x, g.op.Sigmoid(x)), sts.dtype, outputs)


# aten::mish.default
def aten_mish(g, sts, outputs, self):
    "mish(Tensor self) -> Tensor"
    x = _opmath_input(g, sts, self)
    r = g.op.Mul(x, g.op.Tanh(_log1p(g, g.op.Exp(x))))
    return _result(g, r, sts.dtype, outputs)


# aten::softplus.default
def aten_softplus(g, sts, outputs, self, beta=1, threshold=20):
    "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor"
    x = _opmath_input(g, sts, self)
    compute = g.get_type(x)
    scaled = x if beta == 1 else g.op.Mul(x, _const(beta, compute))
    soft = _log1p(g, g.op.Exp(scaled))
    if beta != 1:
        soft = g.op.Div(soft, _const(beta, compute))
    r = g.op.Where(g.op.Greater(scaled, _const(threshold, compute)), x, soft)
    return _result(g, r, sts.dtype, outputs)


# HardSigmoid/HardSwish in float32: onnxruntime runs them inside the convolution before
# them (NCHWc), where the Add/Clip/Div(/Mul) chain made it reorder the layout around each
# (mobilenet_v3_large: 219 -> 140 nodes, 1.25x -> parity with torch.onnx's graph). ONNX
# computes x/6 + 1/2 where torch computes (x + 3)/6: float32 rounding apart, at most one
# ulp of x. onnxruntime has no float64 kernel of either: float64 keeps the chain.


# aten::hardsigmoid.default
def aten_hardsigmoid(g, sts, outputs, self):
    "hardsigmoid(Tensor self) -> Tensor"
    x = _opmath_input(g, sts, self)
    if g.get_type(x) == TensorProto.FLOAT:
        r = g.op.HardSigmoid(x, alpha=1.0 / 6.0, beta=0.5)
    else:
        r = g.op.Div(_clip(g, g.op.Add(x, 3), 0, 6), 6)
    return _result(g, r, sts.dtype, outputs)


# aten::hardswish.default
def aten_hardswish(g, sts, outputs, self):
    "hardswish(Tensor self) -> Tensor"
    x = _opmath_input(g, sts, self)
    if g.get_type(x) == TensorProto.FLOAT:
        r = g.op.HardSwish(x)
    else:
        r = g.op.Div(g.op.Mul(x, _clip(g, g.op.Add(x, 3), 0, 6)), 6)
    return _result(g, r, sts.dtype, outputs)


# aten::logit.default
def aten_logit(g, sts, outputs, self, eps=None):
    "logit(Tensor self, float? eps=None) -> Tensor"
    x = _opmath_input(g, sts, self)
    if eps is not None:
        lo = _const(eps, g.get_type(x))
        x = g.op.Clip(x, lo, _const(1, g.get_type(x)) - lo)
    r = g.op.Log(g.op.Div(x, g.op.Sub(1, x)))
    return _result(g, r, sts.dtype, outputs)


def _log_sigmoid(g, x: str) -> tuple[str, str]:
    """(min(x, 0) - log1p(z), z) with z = exp(-|x|), as torch's CPU kernel."""
    z = g.op.Exp(g.op.Neg(g.op.Abs(x)))
    return g.op.Sub(g.op.Min(x, _const(0, g.get_type(x))), _log1p(g, z)), z


# aten::log_sigmoid.default
def aten_log_sigmoid(g, sts, outputs, self):
    "log_sigmoid(Tensor self) -> Tensor"
    output, _ = _log_sigmoid(g, _opmath_input(g, sts, self))
    return _result(g, output, sts.dtype, outputs)


# aten::log_sigmoid_forward.default
def aten_log_sigmoid_forward(g, sts, outputs, self):
    "log_sigmoid_forward(Tensor self) -> (Tensor output, Tensor buffer)"
    output, buffer = _log_sigmoid(g, _opmath_input(g, sts, self))
    elem = sts.dtypes[0]
    return tuple(
        _result(g, r, elem, [name]) if name else "" for r, name in zip((output, buffer), outputs)
    )


# aten::_prelu_kernel.default
def aten__prelu_kernel(g, sts, outputs, self, weight):
    "_prelu_kernel(Tensor self, Tensor weight) -> Tensor"
    x, w = _opmath_input(g, sts, self), _opmath_input(g, sts, weight)
    r = g.op.Where(g.op.Greater(x, 0), x, g.op.Mul(w, x))
    return _result(g, r, sts.dtype, outputs)


# aten::prelu.default
def aten_prelu(g, sts, outputs, self, weight):
    "prelu(Tensor self, Tensor weight) -> Tensor"
    rank = g.get_rank(self)
    # the weight holds one slope per channel (dim 1), or a single slope
    if rank != 1 and g.get_rank(weight) == 1:
        shape = [-1, *([1] * (rank - 2))] if rank >= 2 else []
        weight = g.op.Reshape(weight, np.array(shape, dtype=np.int64))
    return aten__prelu_kernel(g, sts, outputs, self, weight)


# aten::glu.default
def aten_glu(g, sts, outputs, self, dim=-1):
    "glu(Tensor self, int dim=-1) -> Tensor"
    x = _opmath_input(g, sts, self)
    a, b = g.make_node("Split", [x], 2, axis=dim, num_outputs=2)
    return _result(g, g.op.Mul(a, g.op.Sigmoid(b)), sts.dtype, outputs)


# aten::heaviside.default
def aten_heaviside(g, sts, outputs, self, values):
    "heaviside(Tensor self, Tensor values) -> Tensor"
    if sts.dtype == BOOL:  # False -> values, True -> True (ONNX has no bool Greater)
        return g.op.Or(self, cast(g, values, BOOL), outputs=outputs)
    elem = sts.dtype
    x = cast(g, self, elem)
    step = g.op.Cast(g.op.Greater(x, _const(0, elem)), to=elem)
    return g.op.Where(g.op.Equal(x, _const(0, elem)), cast(g, values, elem), step, outputs=outputs)


CONVERTERS = (
    Converter("aten::abs.default", aten_abs),
    Converter("aten::abs_.default", aten_abs),
    Converter("aten::neg.default", aten_neg),
    Converter("aten::neg_.default", aten_neg),
    Converter("aten::sqrt.default", aten_sqrt),
    Converter("aten::sqrt_.default", aten_sqrt),
    Converter("aten::reciprocal.default", aten_reciprocal),
    Converter("aten::reciprocal_.default", aten_reciprocal),
    Converter("aten::exp.default", aten_exp),
    Converter("aten::exp_.default", aten_exp),
    Converter("aten::log.default", aten_log),
    Converter("aten::log_.default", aten_log),
    Converter("aten::sin.default", aten_sin),
    Converter("aten::sin_.default", aten_sin),
    Converter("aten::cos.default", aten_cos),
    Converter("aten::cos_.default", aten_cos),
    Converter("aten::tan.default", aten_tan),
    Converter("aten::tan_.default", aten_tan),
    Converter("aten::asin.default", aten_asin),
    Converter("aten::asin_.default", aten_asin),
    Converter("aten::acos.default", aten_acos),
    Converter("aten::acos_.default", aten_acos),
    Converter("aten::atan.default", aten_atan),
    Converter("aten::atan_.default", aten_atan),
    Converter("aten::sinh.default", aten_sinh),
    Converter("aten::sinh_.default", aten_sinh),
    Converter("aten::cosh.default", aten_cosh),
    Converter("aten::cosh_.default", aten_cosh),
    Converter("aten::tanh.default", aten_tanh),
    Converter("aten::tanh_.default", aten_tanh),
    Converter("aten::asinh.default", aten_asinh),
    Converter("aten::asinh_.default", aten_asinh),
    Converter("aten::acosh.default", aten_acosh),
    Converter("aten::acosh_.default", aten_acosh),
    Converter("aten::atanh.default", aten_atanh),
    Converter("aten::atanh_.default", aten_atanh),
    Converter("aten::erf.default", aten_erf),
    Converter("aten::erf_.default", aten_erf),
    Converter("aten::sigmoid.default", aten_sigmoid),
    Converter("aten::sigmoid_.default", aten_sigmoid),
    Converter("aten::square.default", aten_square),
    Converter("aten::square_.default", aten_square),
    Converter("aten::relu.default", aten_relu),
    Converter("aten::relu_.default", aten_relu),
    Converter("aten::sign.default", aten_sign),
    Converter("aten::sign_.default", aten_sign),
    Converter("aten::sgn.default", aten_sign),
    Converter("aten::sgn_.default", aten_sign),
    Converter("aten::rsqrt.default", aten_rsqrt),
    Converter("aten::rsqrt_.default", aten_rsqrt),
    Converter("aten::exp2.default", aten_exp2),
    Converter("aten::exp2_.default", aten_exp2),
    Converter("aten::expm1.default", aten_expm1),
    Converter("aten::expm1_.default", aten_expm1),
    Converter("aten::log1p.default", aten_log1p),
    Converter("aten::log1p_.default", aten_log1p),
    Converter("aten::log2.default", aten_log2),
    Converter("aten::log2_.default", aten_log2),
    Converter("aten::log10.default", aten_log10),
    Converter("aten::log10_.default", aten_log10),
    Converter("aten::ceil.default", aten_ceil),
    Converter("aten::ceil_.default", aten_ceil),
    Converter("aten::floor.default", aten_floor),
    Converter("aten::floor_.default", aten_floor),
    Converter("aten::round.default", aten_round),
    Converter("aten::round.decimals", aten_round_decimals),
    Converter("aten::round_.default", aten_round),
    Converter("aten::round_.decimals", aten_round_decimals),
    Converter("aten::trunc.default", aten_trunc),
    Converter("aten::trunc_.default", aten_trunc),
    Converter("aten::frac.default", aten_frac),
    Converter("aten::frac_.default", aten_frac),
    Converter("aten::isnan.default", aten_isnan),
    Converter("aten::isinf.default", aten_isinf),
    Converter("aten::isfinite.default", aten_isfinite),
    Converter("aten::nan_to_num.default", aten_nan_to_num),
    Converter("aten::nan_to_num_.default", aten_nan_to_num),
    Converter("aten::hardtanh.default", aten_hardtanh),
    Converter("aten::hardtanh_.default", aten_hardtanh),
    Converter("aten::relu6.default", aten_relu6),
    Converter("aten::relu6_.default", aten_relu6),
    Converter("aten::threshold.default", aten_threshold),
    Converter("aten::threshold_.default", aten_threshold),
    Converter("aten::leaky_relu.default", aten_leaky_relu),
    Converter("aten::leaky_relu_.default", aten_leaky_relu),
    Converter("aten::elu.default", aten_elu),
    Converter("aten::elu_.default", aten_elu),
    Converter("aten::celu.default", aten_celu),
    Converter("aten::celu_.default", aten_celu),
    Converter("aten::selu.default", aten_selu),
    Converter("aten::selu_.default", aten_selu),
    Converter("aten::silu.default", aten_silu),
    Converter("aten::silu_.default", aten_silu),
    Converter("aten::mish.default", aten_mish),
    Converter("aten::mish_.default", aten_mish),
    Converter("aten::softplus.default", aten_softplus),
    Converter("aten::hardsigmoid.default", aten_hardsigmoid),
    Converter("aten::hardsigmoid_.default", aten_hardsigmoid),
    Converter("aten::hardswish.default", aten_hardswish),
    Converter("aten::hardswish_.default", aten_hardswish),
    Converter("aten::logit.default", aten_logit),
    Converter("aten::logit_.default", aten_logit),
    Converter("aten::log_sigmoid.default", aten_log_sigmoid),
    Converter("aten::log_sigmoid_forward.default", aten_log_sigmoid_forward),
    Converter("aten::_prelu_kernel.default", aten__prelu_kernel),
    Converter("aten::prelu.default", aten_prelu),
    Converter("aten::glu.default", aten_glu),
    Converter("aten::heaviside.default", aten_heaviside),
    Converter("aten::heaviside_.default", aten_heaviside),
    Converter("aten::gelu.default", aten_gelu, opsets=(18, 19)),
    Converter("aten::gelu.default", aten_gelu_20, opsets=(20, 10_000)),
    Converter("aten::gelu_.default", aten_gelu, opsets=(18, 19)),
    Converter("aten::gelu_.default", aten_gelu_20, opsets=(20, 10_000)),
)
