"""Element-wise binary ops: arithmetic, comparisons, logic, where, clamp and dtype casts.

Every converter computes in the dtype torch computes in, following its CPU kernels:

- the result dtype (``sts.dtype``), or for in-place variants (``x.add_(y)``) the promoted
  dtype of the inputs, cast to self's dtype at the end;
- comparisons compute in the promoted dtype of their inputs and return bool;
- float16/bfloat16: ``mul``/``div`` and the division modes read a one-element second
  operand (a python scalar, a 0-d float32 tensor) at float32 precision; ``add``/``sub``
  with ``alpha``, ``lerp``, ``addcmul``, ``addcdiv``, ``pow`` and ``atan2`` compute in
  float32 ("opmath") and round once; trunc/floor division of two float16 tensors rounds
  every step to float16, explicitly.
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
    onnx_type_from_torch,
    operand,
    opmath_type,
    quadrant_atan,
    trunc,
)

BOOL = TensorProto.BOOL
FLOAT = TensorProto.FLOAT
_REDUCED = (TensorProto.FLOAT16, TensorProto.BFLOAT16)


# -- helpers ----------------------------------------------------------------------------------


def _const(value, elem: int) -> np.ndarray:
    return np.array(value, dtype=numpy_dtype(elem))


def _rounded(value, elem: int, compute: int) -> np.ndarray:
    """A scalar rounded to ``elem`` (as torch casts it), held in the ``compute`` type."""
    return _const(value, elem).astype(numpy_dtype(compute))


def _result(g, x: str, elem: int, outputs) -> str:
    """``x`` as the op's result: cast to ``elem`` when it was computed in another type."""
    if g.get_type(x) == elem:
        return named(g, x, outputs[0]) if type(outputs) is list else x
    return g.op.Cast(x, to=elem, outputs=outputs)


def _node(g, op_type: str, inputs: list, elem: int, outputs, **attributes) -> str:
    """One node named ``outputs``, followed by a Cast when computed in a wider type."""
    make = getattr(g.op, op_type)
    if g.get_type(inputs[0]) == elem:
        return make(*inputs, outputs=outputs, **attributes)
    return g.op.Cast(make(*inputs, **attributes), to=elem, outputs=outputs)


def _one_element(g, other) -> bool:
    """True for a python scalar or a tensor of one element (torch's ``iter.is_scalar(2)``)."""
    if type(other) is not str:
        return True
    shape = g.get_shape(other)
    return shape is not None and all(type(d) is int for d in shape) and math.prod(shape) == 1


def _mul_operands(g, self, other, elem: int) -> tuple[str, str]:
    """(a, b) in the type torch's mul/div kernels compute in.

    For a float16/bfloat16 result they read a one-element second operand at its original
    precision (a python scalar, a 0-d float32 tensor) and compute in float32.
    """
    if elem in _REDUCED and _one_element(g, other):
        if type(other) is not str or g.get_type(other) != elem:
            return cast(g, operand(g, self, elem), FLOAT), operand(g, other, FLOAT)
    return operand(g, self, elem), operand(g, other, elem)


def _division_operands(g, self, other, elem: int) -> tuple:
    """(a, b, rounding step) for the division formulas (trunc and floor modes).

    torch computes them on float16/bfloat16 tensors in Half arithmetic, rounding every
    step: the steps run in float32 with an explicit round trip through ``elem``, since
    onnxruntime runs float16 ops in float32 and drops the roundings between them.
    """
    if elem not in _REDUCED:
        return operand(g, self, elem), operand(g, other, elem), lambda x: x
    if _one_element(g, other):
        # a one-element divisor is read at full precision and the formula runs in float32
        return cast(g, operand(g, self, elem), FLOAT), operand(g, other, FLOAT), lambda x: x
    a, b = (cast(g, operand(g, v, elem), FLOAT) for v in (self, other))
    return a, b, lambda x: g.op.Cast(g.op.Cast(x, to=elem), to=FLOAT)


def _opmath(g, value, elem: int) -> str:
    """A tensor or scalar cast to ``elem`` (torch's promotion), then to its opmath type."""
    return cast(g, operand(g, value, elem), opmath_type(elem))


def _input_dtype(sts, count: int = 2) -> int:
    """Promoted dtype of an op's first ``count`` inputs (torch's rule, on the FX meta)."""
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

    values = [v for v in sts.input_values[:count] if v is not None]
    _, dtype = elementwise_dtypes(
        *values, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT
    )
    return onnx_type_from_torch(dtype)


def _computed(g, sts, outputs, count: int, build, *args) -> str:
    """``build(g, *args, elem, outputs)``, with ``elem`` the dtype torch computes in.

    That is the result dtype, except for in-place variants: ``x.add_(y)`` computes in the
    promoted dtype of its first ``count`` inputs and casts the result to self's dtype.
    """
    if not sts.inplace:
        return build(g, *args, sts.dtype, outputs)
    elem = _input_dtype(sts, count)
    if elem == sts.dtype:
        return build(g, *args, elem, outputs)
    return g.op.Cast(build(g, *args, elem, 1), to=sts.dtype, outputs=outputs)


def _bool_result(g, op_type: str, inputs: list, sts, outputs) -> str:
    """A bool-valued node, cast to the dtype torch records (in-place variants keep self's)."""
    if sts.dtype == BOOL:
        return g.make_node(op_type, inputs, outputs)
    return g.op.Cast(g.make_node(op_type, inputs), to=sts.dtype, outputs=outputs)


def _wrong_sign(g, mod: str, divisor: str) -> str:
    """``mod != 0 and (divisor < 0) != (mod < 0)``: where fmod differs from Python's %."""
    return g.op.And(
        g.op.Not(g.op.Equal(mod, 0)), g.op.Xor(g.op.Less(divisor, 0), g.op.Less(mod, 0))
    )


# -- add, sub, mul, div ---------------------------------------------------------------------


def _add_sub(g, op_type: str, self, other, alpha, elem: int, outputs) -> str:
    if elem == BOOL:
        if op_type == "Sub":
            raise UnsupportedError("Subtraction of bool tensors (torch raises).")
        a = operand(g, self, BOOL)
        # bool alpha * other is other or nothing
        if alpha:
            return g.op.Or(a, operand(g, other, BOOL), outputs=outputs)
        return named(g, a, outputs[0]) if type(outputs) is list else a
    a, b = operand(g, self, elem), operand(g, other, elem)
    if alpha == 1:
        return g.make_node(op_type, [a, b], outputs)
    compute = opmath_type(elem)
    scaled = g.op.Mul(cast(g, b, compute), _rounded(alpha, elem, compute))
    return _node(g, op_type, [cast(g, a, compute), scaled], elem, outputs)


# aten::add.Tensor
def aten_add(g, sts, outputs, self, other, alpha=1):
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    return _computed(g, sts, outputs, 2, _add_sub, "Add", self, other, alpha)


# aten::sub.Tensor
def aten_sub(g, sts, outputs, self, other, alpha=1):
    "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    return _computed(g, sts, outputs, 2, _add_sub, "Sub", self, other, alpha)


# aten::rsub.Tensor
def aten_rsub(g, sts, outputs, self, other, alpha=1):
    "rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    return _add_sub(g, "Sub", other, self, alpha, sts.dtype, outputs)


# aten::mul.Tensor
def aten_mul(g, sts, outputs, self, other):
    "mul.Tensor(Tensor self, Tensor other) -> Tensor"
    return _computed(g, sts, outputs, 2, _mul, self, other)


def _mul(g, self, other, elem: int, outputs) -> str:
    if elem == BOOL:
        return g.op.And(operand(g, self, BOOL), operand(g, other, BOOL), outputs=outputs)
    a, b = _mul_operands(g, self, other, elem)
    return _node(g, "Mul", [a, b], elem, outputs)


# aten::div.Tensor
def aten_div(g, sts, outputs, self, other):
    "div.Tensor(Tensor self, Tensor other) -> Tensor"
    return _computed(g, sts, outputs, 2, _div, self, other)


def _div(g, self, other, elem: int, outputs) -> str:
    a, b = _mul_operands(g, self, other, elem)
    return _node(g, "Div", [a, b], elem, outputs)


# aten::div.Tensor_mode
def aten_div_mode(g, sts, outputs, self, other, rounding_mode=None):
    "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"
    if rounding_mode is None:
        return aten_div(g, sts, outputs, self, other)
    return _computed(g, sts, outputs, 2, _div_mode, self, other, rounding_mode)


def _div_mode(g, self, other, rounding_mode: str, elem: int, outputs) -> str:
    if rounding_mode == "floor":
        return _floor_divide(g, self, other, elem, outputs)
    if rounding_mode != "trunc":
        raise UnsupportedError(f"div with rounding_mode={rounding_mode!r}.")
    if not is_float(elem):
        # integer Div truncates toward zero, as C and torch do
        return g.op.Div(operand(g, self, elem), operand(g, other, elem), outputs=outputs)
    a, b, step = _division_operands(g, self, other, elem)
    return _result(g, trunc(g, step(g.op.Div(a, b))), elem, outputs)


# aten::floor_divide.default
def aten_floor_divide(g, sts, outputs, self, other):
    "floor_divide(Tensor self, Tensor other) -> Tensor"
    return _computed(g, sts, outputs, 2, _floor_divide, self, other)


def _floor_divide(g, self, other, elem: int, outputs) -> str:
    if not is_float(elem):
        a, b = operand(g, self, elem), operand(g, other, elem)
        # a - a % b (Mod with fmod=0 follows Python's sign rule) is an exact multiple of b
        return g.op.Div(g.op.Sub(a, g.op.Mod(a, b, fmod=0)), b, outputs=outputs)
    a, b, step = _division_operands(g, self, other, elem)
    return _result(g, _python_floor_div(g, a, b, step), elem, outputs)


def _python_floor_div(g, a: str, b: str, step) -> str:
    """torch's div_floor_floating (Python's algorithm), exact where floor(a / b) is not.

    ``step`` rounds an intermediate result as torch's arithmetic does (float16 steps).
    """
    elem = g.get_type(a)
    mod = g.op.Mod(a, b, fmod=1)
    div = step(g.op.Div(step(g.op.Sub(a, mod)), b))
    div = step(g.op.Sub(div, g.op.Cast(_wrong_sign(g, mod, b), to=elem)))
    floor = g.op.Floor(div)
    above_half = g.op.Greater(step(g.op.Sub(div, floor)), 0.5)
    floor = step(g.op.Add(floor, g.op.Cast(above_half, to=elem)))
    quotient = step(g.op.Div(a, b))
    # a zero quotient keeps the sign of a / b; a zero divisor gives IEEE's a / b
    result = g.op.Where(g.op.Equal(div, 0), g.op.Mul(quotient, 0), floor)
    return g.op.Where(g.op.Equal(b, 0), quotient, result)


# -- remainder, fmod, pow ---------------------------------------------------------------------


# aten::remainder.Tensor
def aten_remainder(g, sts, outputs, self, other):
    "remainder.Tensor(Tensor self, Tensor other) -> Tensor"
    return _computed(g, sts, outputs, 2, _remainder, self, other)


def _remainder(g, self, other, elem: int, outputs) -> str:
    a, b = operand(g, self, elem), operand(g, other, elem)
    if not is_float(elem):
        return g.op.Mod(a, b, fmod=0, outputs=outputs)
    mod = g.op.Mod(a, b, fmod=1)
    return g.op.Where(_wrong_sign(g, mod, b), g.op.Add(mod, b), mod, outputs=outputs)


# aten::fmod.Tensor
def aten_fmod(g, sts, outputs, self, other):
    "fmod.Tensor(Tensor self, Tensor other) -> Tensor"
    return _computed(g, sts, outputs, 2, _fmod, self, other)


def _fmod(g, self, other, elem: int, outputs) -> str:
    return g.op.Mod(operand(g, self, elem), operand(g, other, elem), fmod=1, outputs=outputs)


# aten::pow.Tensor_Tensor
def aten_pow(g, sts, outputs, self, exponent):
    "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"
    return _computed(g, sts, outputs, 2, _pow, self, exponent)


def _pow(g, self, exponent, elem: int, outputs) -> str:
    if is_float(elem):
        return _float_pow(g, self, exponent, elem, outputs)
    if elem == BOOL:
        raise UnsupportedError("pow of bool tensors.")
    if type(exponent) is not str:
        return _int_pow(g, operand(g, self, elem), int(exponent), outputs)
    # integer Pow of two tensors (onnxruntime computes it in double: exact below 2**53)
    return g.op.Pow(operand(g, self, elem), operand(g, exponent, elem), outputs=outputs)


def _float_pow(g, self, exponent, elem: int, outputs) -> str:
    compute = opmath_type(elem)
    base = _opmath(g, self, elem)
    if type(exponent) is str:
        return _node(g, "Pow", [base, _opmath(g, exponent, elem)], elem, outputs)
    # torch's pow_tensor_scalar_optimized_kernel special cases
    e = float(_rounded(exponent, elem, compute))
    if e in (2.0, 3.0):
        # onnxruntime computes these as x*x and x*x*x, as torch does, and its fusions
        # (SimplifiedLayerNormalization, FastGelu) look for Pow
        return _node(g, "Pow", [base, _rounded(exponent, elem, compute)], elem, outputs)
    if e == 0.5:
        return _node(g, "Sqrt", [base], elem, outputs)
    if e == -0.5:
        return _node(g, "Reciprocal", [g.op.Sqrt(base)], elem, outputs)
    if e == -1.0:
        return _node(g, "Reciprocal", [base], elem, outputs)
    if e == -2.0:
        return _node(g, "Reciprocal", [g.op.Mul(base, base)], elem, outputs)
    return _node(g, "Pow", [base, _rounded(exponent, elem, compute)], elem, outputs)


def _int_pow(g, base: str, exponent: int, outputs) -> str:
    """Exact integer power by squaring (wraps on overflow like torch)."""
    if exponent < 0:
        raise UnsupportedError(
            f"pow of an integer tensor to the negative power {exponent} (torch raises)."
        )
    if exponent == 0:
        return g.op.Add(g.op.Mul(base, 0), 1, outputs=outputs)
    result, square = None, base
    while True:
        if exponent & 1:
            result = square if result is None else g.op.Mul(result, square)
        exponent >>= 1
        if not exponent:
            return g.op.Identity(result, outputs=outputs)
        square = g.op.Mul(square, square)


# -- maximum, minimum, atan2 --------------------------------------------------------------------


# aten::maximum.default
def aten_maximum(g, sts, outputs, self, other):
    "maximum(Tensor self, Tensor other) -> Tensor"
    elem = sts.dtype
    op_type = "Or" if elem == BOOL else "Max"
    return g.make_node(op_type, [operand(g, self, elem), operand(g, other, elem)], outputs)


# aten::minimum.default
def aten_minimum(g, sts, outputs, self, other):
    "minimum(Tensor self, Tensor other) -> Tensor"
    elem = sts.dtype
    op_type = "And" if elem == BOOL else "Min"
    return g.make_node(op_type, [operand(g, self, elem), operand(g, other, elem)], outputs)


# aten::atan2.default
def aten_atan2(g, sts, outputs, self, other):
    "atan2(Tensor self, Tensor other) -> Tensor"
    return _computed(g, sts, outputs, 2, _atan2, self, other)


def _atan2(g, self, other, elem: int, outputs) -> str:
    y, x = _opmath(g, self, elem), _opmath(g, other, elem)
    return _result(g, quadrant_atan(g, y, x), elem, outputs)


# -- comparisons ----------------------------------------------------------------------------


def _compare(g, sts, outputs, op_type: str, self, other, negate: bool = False) -> str:
    compute = _input_dtype(sts)
    a, b = operand(g, self, compute), operand(g, other, compute)
    if compute == BOOL and op_type != "Equal":
        a, b = cast(g, a, TensorProto.INT32), cast(g, b, TensorProto.INT32)
    if negate:
        return _bool_result(g, "Not", [g.make_node(op_type, [a, b])], sts, outputs)
    return _bool_result(g, op_type, [a, b], sts, outputs)


# aten::eq.Tensor
def aten_eq(g, sts, outputs, self, other):
    "eq.Tensor(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "Equal", self, other)


# aten::ne.Tensor
def aten_ne(g, sts, outputs, self, other):
    "ne.Tensor(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "Equal", self, other, negate=True)


# aten::lt.Tensor
def aten_lt(g, sts, outputs, self, other):
    "lt.Tensor(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "Less", self, other)


# aten::le.Tensor
def aten_le(g, sts, outputs, self, other):
    "le.Tensor(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "LessOrEqual", self, other)


# aten::gt.Tensor
def aten_gt(g, sts, outputs, self, other):
    "gt.Tensor(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "Greater", self, other)


# aten::ge.Tensor
def aten_ge(g, sts, outputs, self, other):
    "ge.Tensor(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "GreaterOrEqual", self, other)


# -- logical and bitwise ------------------------------------------------------------------------


def _logical(g, sts, outputs, op_type: str, self, other) -> str:
    return _bool_result(g, op_type, [cast(g, self, BOOL), cast(g, other, BOOL)], sts, outputs)


# aten::logical_and.default
def aten_logical_and(g, sts, outputs, self, other):
    "logical_and(Tensor self, Tensor other) -> Tensor"
    return _logical(g, sts, outputs, "And", self, other)


# aten::logical_or.default
def aten_logical_or(g, sts, outputs, self, other):
    "logical_or(Tensor self, Tensor other) -> Tensor"
    return _logical(g, sts, outputs, "Or", self, other)


# aten::logical_xor.default
def aten_logical_xor(g, sts, outputs, self, other):
    "logical_xor(Tensor self, Tensor other) -> Tensor"
    return _logical(g, sts, outputs, "Xor", self, other)


# aten::logical_not.default
def aten_logical_not(g, sts, outputs, self):
    "logical_not(Tensor self) -> Tensor"
    return _bool_result(g, "Not", [cast(g, self, BOOL)], sts, outputs)


def _bitwise(g, sts, outputs, bool_op: str, int_op: str, self, other) -> str:
    elem = sts.dtype
    if is_float(elem):
        raise UnsupportedError(f"{int_op} of floating point tensors (torch raises).")
    op_type = bool_op if elem == BOOL else int_op
    return g.make_node(op_type, [operand(g, self, elem), operand(g, other, elem)], outputs)


# aten::bitwise_and.Tensor
def aten_bitwise_and(g, sts, outputs, self, other):
    "bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor"
    return _bitwise(g, sts, outputs, "And", "BitwiseAnd", self, other)


# aten::bitwise_or.Tensor
def aten_bitwise_or(g, sts, outputs, self, other):
    "bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor"
    return _bitwise(g, sts, outputs, "Or", "BitwiseOr", self, other)


# aten::bitwise_xor.Tensor
def aten_bitwise_xor(g, sts, outputs, self, other):
    "bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor"
    return _bitwise(g, sts, outputs, "Xor", "BitwiseXor", self, other)


# aten::bitwise_not.default
def aten_bitwise_not(g, sts, outputs, self):
    "bitwise_not(Tensor self) -> Tensor"
    elem = sts.dtype
    if is_float(elem):
        raise UnsupportedError("bitwise_not of a floating point tensor (torch raises).")
    op_type = "Not" if elem == BOOL else "BitwiseNot"
    return g.make_node(op_type, [cast(g, self, elem)], outputs)


# -- where, clamp, lerp, addcmul, addcdiv -------------------------------------------------------


# aten::where.self
def aten_where(g, sts, outputs, condition, self, other):
    "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor"
    elem = sts.dtype
    cond = cast(g, condition, BOOL)
    a, b = operand(g, self, elem), operand(g, other, elem)
    if elem == BOOL:
        # the same selection with logic ops: onnxruntime has no Where kernel for bool
        either = g.op.And(cond, a), g.op.And(g.op.Not(cond), b)
        return g.op.Or(*either, outputs=outputs)
    return g.op.Where(cond, a, b, outputs=outputs)


def _clamp(g, self: str, lower, upper, elem: int, outputs) -> str:
    """Scalar bounds go to Clip, tensor bounds to Max/Min (both propagate nan inputs)."""
    if elem == BOOL:  # ONNX has no bool Clip/Max/Min: 0/1 in uint8 clamp exactly
        return g.op.Cast(_clamp(g, self, lower, upper, TensorProto.UINT8, 1), to=BOOL, outputs=outputs)
    x = cast(g, self, elem)
    if any(type(v) is float and math.isnan(v) for v in (lower, upper)):
        # torch's clamp returns nan everywhere for a nan bound; Clip would ignore it
        return g.op.Add(x, _const(math.nan, elem), outputs=outputs)
    if lower is not None and upper is not None and type(lower) is not str:
        return g.op.Clip(x, _const(lower, elem), _const(upper, elem), outputs=outputs)
    # one bound: Max/Min (onnxruntime's Clip clamps -inf to the lowest float for a missing min)
    if upper is None:
        return g.op.Max(x, operand(g, lower, elem), outputs=outputs)
    if lower is not None:
        x = g.op.Max(x, operand(g, lower, elem))
    return g.op.Min(x, operand(g, upper, elem), outputs=outputs)


# aten::clamp.default
def aten_clamp(g, sts, outputs, self, min=None, max=None):
    "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"
    if min is None and max is None:
        raise UnsupportedError("clamp without min and max (torch raises).")
    return _computed(g, sts, outputs, 3, _clamp, self, min, max)


# aten::clamp_min.default
def aten_clamp_min(g, sts, outputs, self, min):
    "clamp_min(Tensor self, Scalar min) -> Tensor"
    return _computed(g, sts, outputs, 2, _clamp, self, min, None)


# aten::clamp_max.default
def aten_clamp_max(g, sts, outputs, self, max):
    "clamp_max(Tensor self, Scalar max) -> Tensor"
    return _computed(g, sts, outputs, 2, _clamp, self, None, max)


# aten::lerp.Scalar
def aten_lerp(g, sts, outputs, self, end, weight):
    "lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor"
    return _computed(g, sts, outputs, 3, _lerp, self, end, weight)


def _lerp(g, self, end, weight, elem: int, outputs) -> str:
    compute = opmath_type(elem)
    start, stop = _opmath(g, self, elem), _opmath(g, end, elem)
    diff = g.op.Sub(stop, start)
    # torch: self + weight * (end - self) if |weight| < 0.5, else end - (end - self) * (1 - weight)
    if type(weight) is not str:
        w = _const(weight, compute)
        if abs(float(w)) < 0.5:
            return _result(g, g.op.Add(start, g.op.Mul(diff, w)), elem, outputs)
        rest = _const(1, compute) - w
        return _result(g, g.op.Sub(stop, g.op.Mul(diff, rest)), elem, outputs)
    w = _opmath(g, weight, elem)
    small = g.op.Less(g.op.Abs(w), 0.5)
    near_start = g.op.Add(start, g.op.Mul(w, diff))
    near_end = g.op.Sub(stop, g.op.Mul(diff, g.op.Sub(1, w)))
    return _result(g, g.op.Where(small, near_start, near_end), elem, outputs)


def _scaled_product(g, op_type: str, self, tensor1, tensor2, value, elem: int, outputs) -> str:
    """self + value * tensor1 (op_type) tensor2, in torch's order and opmath type."""
    compute = opmath_type(elem)
    t1 = _opmath(g, tensor1, elem)
    if value != 1:
        t1 = g.op.Mul(t1, _const(value, compute))
    product = g.make_node(op_type, [t1, _opmath(g, tensor2, elem)])
    return _node(g, "Add", [_opmath(g, self, elem), product], elem, outputs)


# aten::addcmul.default
def aten_addcmul(g, sts, outputs, self, tensor1, tensor2, value=1):
    "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"
    return _computed(g, sts, outputs, 3, _scaled_product, "Mul", self, tensor1, tensor2, value)


# aten::addcdiv.default
def aten_addcdiv(g, sts, outputs, self, tensor1, tensor2, value=1):
    "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"
    if not is_float(sts.dtype):
        raise UnsupportedError("addcdiv of integer tensors (torch raises).")
    return _computed(g, sts, outputs, 3, _scaled_product, "Div", self, tensor1, tensor2, value)


# -- dtype conversions and copy -----------------------------------------------------------------


def _convert(g, self: str, elem: int, outputs) -> str:
    """Cast (float to int truncates, like torch); the input itself when nothing changes."""
    if g.get_type(self) == elem:
        return self
    return g.op.Cast(self, to=elem, outputs=outputs)


# aten::_to_copy.default
def aten__to_copy(
    g,
    sts,
    outputs,
    self,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    memory_format=None,
):
    "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor"  # noqa: E501
    return _convert(g, self, sts.dtype, outputs)


# aten::to.dtype
def aten_to_dtype(g, sts, outputs, self, dtype, non_blocking=False, copy=False, memory_format=None):
    "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"  # noqa: E501
    return _convert(g, self, sts.dtype, outputs)


# aten::to.dtype_layout
def aten_to_dtype_layout(
    g,
    sts,
    outputs,
    self,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    copy=False,
    memory_format=None,
):
    "to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"  # noqa: E501
    return _convert(g, self, sts.dtype, outputs)


# aten::to.device
def aten_to_device(
    g, sts, outputs, self, device, dtype, non_blocking=False, copy=False, memory_format=None
):
    "to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"  # noqa: E501
    return _convert(g, self, sts.dtype, outputs)


# aten::to.other
def aten_to_other(g, sts, outputs, self, other, non_blocking=False, copy=False, memory_format=None):
    "to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"  # noqa: E501
    return _convert(g, self, sts.dtype, outputs)


# aten::type_as.default
def aten_type_as(g, sts, outputs, self, other):
    "type_as(Tensor self, Tensor other) -> Tensor"
    return _convert(g, self, sts.dtype, outputs)


# aten::copy.default
def aten_copy(g, sts, outputs, self, src, non_blocking=False):
    "copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor"
    value = cast(g, src, sts.dtype)
    if g.get_shape(src) == tuple(sts.shape):
        return named(g, value, outputs[0])
    return g.op.Expand(value, g.op.Shape(self), outputs=outputs)


CONVERTERS = (
    Converter("aten::add.Tensor", aten_add),
    Converter("aten::add.Scalar", aten_add),
    Converter("aten::add_.Tensor", aten_add),
    Converter("aten::add_.Scalar", aten_add),
    Converter("aten::sub.Tensor", aten_sub),
    Converter("aten::sub.Scalar", aten_sub),
    Converter("aten::sub_.Tensor", aten_sub),
    Converter("aten::sub_.Scalar", aten_sub),
    Converter("aten::rsub.Tensor", aten_rsub),
    Converter("aten::rsub.Scalar", aten_rsub),
    Converter("aten::mul.Tensor", aten_mul),
    Converter("aten::mul.Scalar", aten_mul),
    Converter("aten::mul_.Tensor", aten_mul),
    Converter("aten::mul_.Scalar", aten_mul),
    Converter("aten::div.Tensor", aten_div),
    Converter("aten::div.Scalar", aten_div),
    Converter("aten::div_.Tensor", aten_div),
    Converter("aten::div_.Scalar", aten_div),
    Converter("aten::div.Tensor_mode", aten_div_mode),
    Converter("aten::div.Scalar_mode", aten_div_mode),
    Converter("aten::div_.Tensor_mode", aten_div_mode),
    Converter("aten::div_.Scalar_mode", aten_div_mode),
    Converter("aten::true_divide.Tensor", aten_div),
    Converter("aten::true_divide.Scalar", aten_div),
    Converter("aten::true_divide_.Tensor", aten_div),
    Converter("aten::true_divide_.Scalar", aten_div),
    Converter("aten::floor_divide.default", aten_floor_divide),
    Converter("aten::floor_divide.Scalar", aten_floor_divide),
    Converter("aten::floor_divide_.Tensor", aten_floor_divide),
    Converter("aten::floor_divide_.Scalar", aten_floor_divide),
    Converter("aten::remainder.Tensor", aten_remainder),
    Converter("aten::remainder.Scalar", aten_remainder),
    Converter("aten::remainder_.Tensor", aten_remainder),
    Converter("aten::remainder_.Scalar", aten_remainder),
    Converter("aten::remainder.Scalar_Tensor", aten_remainder),
    Converter("aten::fmod.Tensor", aten_fmod),
    Converter("aten::fmod.Scalar", aten_fmod),
    Converter("aten::fmod_.Tensor", aten_fmod),
    Converter("aten::fmod_.Scalar", aten_fmod),
    Converter("aten::pow.Tensor_Tensor", aten_pow),
    Converter("aten::pow.Tensor_Scalar", aten_pow),
    Converter("aten::pow.Scalar", aten_pow),
    Converter("aten::pow_.Tensor", aten_pow),
    Converter("aten::pow_.Scalar", aten_pow),
    Converter("aten::maximum.default", aten_maximum),
    Converter("aten::minimum.default", aten_minimum),
    Converter("aten::max.other", aten_maximum),
    Converter("aten::min.other", aten_minimum),
    Converter("aten::atan2.default", aten_atan2),
    Converter("aten::atan2_.default", aten_atan2),
    Converter("aten::eq.Tensor", aten_eq),
    Converter("aten::eq.Scalar", aten_eq),
    Converter("aten::eq_.Tensor", aten_eq),
    Converter("aten::eq_.Scalar", aten_eq),
    Converter("aten::ne.Tensor", aten_ne),
    Converter("aten::ne.Scalar", aten_ne),
    Converter("aten::ne_.Tensor", aten_ne),
    Converter("aten::ne_.Scalar", aten_ne),
    Converter("aten::lt.Tensor", aten_lt),
    Converter("aten::lt.Scalar", aten_lt),
    Converter("aten::lt_.Tensor", aten_lt),
    Converter("aten::lt_.Scalar", aten_lt),
    Converter("aten::le.Tensor", aten_le),
    Converter("aten::le.Scalar", aten_le),
    Converter("aten::le_.Tensor", aten_le),
    Converter("aten::le_.Scalar", aten_le),
    Converter("aten::gt.Tensor", aten_gt),
    Converter("aten::gt.Scalar", aten_gt),
    Converter("aten::gt_.Tensor", aten_gt),
    Converter("aten::gt_.Scalar", aten_gt),
    Converter("aten::ge.Tensor", aten_ge),
    Converter("aten::ge.Scalar", aten_ge),
    Converter("aten::ge_.Tensor", aten_ge),
    Converter("aten::ge_.Scalar", aten_ge),
    Converter("aten::logical_and.default", aten_logical_and),
    Converter("aten::logical_and_.default", aten_logical_and),
    Converter("aten::logical_or.default", aten_logical_or),
    Converter("aten::logical_or_.default", aten_logical_or),
    Converter("aten::logical_xor.default", aten_logical_xor),
    Converter("aten::logical_xor_.default", aten_logical_xor),
    Converter("aten::logical_not.default", aten_logical_not),
    Converter("aten::logical_not_.default", aten_logical_not),
    Converter("aten::bitwise_and.Tensor", aten_bitwise_and),
    Converter("aten::bitwise_and.Scalar", aten_bitwise_and),
    Converter("aten::bitwise_and_.Tensor", aten_bitwise_and),
    Converter("aten::bitwise_and_.Scalar", aten_bitwise_and),
    Converter("aten::bitwise_or.Tensor", aten_bitwise_or),
    Converter("aten::bitwise_or.Scalar", aten_bitwise_or),
    Converter("aten::bitwise_or_.Tensor", aten_bitwise_or),
    Converter("aten::bitwise_or_.Scalar", aten_bitwise_or),
    Converter("aten::bitwise_xor.Tensor", aten_bitwise_xor),
    Converter("aten::bitwise_xor.Scalar", aten_bitwise_xor),
    Converter("aten::bitwise_xor_.Tensor", aten_bitwise_xor),
    Converter("aten::bitwise_xor_.Scalar", aten_bitwise_xor),
    Converter("aten::bitwise_not.default", aten_bitwise_not),
    Converter("aten::bitwise_not_.default", aten_bitwise_not),
    Converter("aten::__and__.Tensor", aten_bitwise_and),
    Converter("aten::__and__.Scalar", aten_bitwise_and),
    Converter("aten::__or__.Tensor", aten_bitwise_or),
    Converter("aten::__or__.Scalar", aten_bitwise_or),
    Converter("aten::__xor__.Tensor", aten_bitwise_xor),
    Converter("aten::__xor__.Scalar", aten_bitwise_xor),
    Converter("aten::where.self", aten_where),
    Converter("aten::where.ScalarSelf", aten_where),
    Converter("aten::where.ScalarOther", aten_where),
    Converter("aten::where.Scalar", aten_where),
    Converter("aten::clamp.default", aten_clamp),
    Converter("aten::clamp.Tensor", aten_clamp),
    Converter("aten::clamp_.default", aten_clamp),
    Converter("aten::clamp_.Tensor", aten_clamp),
    Converter("aten::clamp_min.default", aten_clamp_min),
    Converter("aten::clamp_min.Tensor", aten_clamp_min),
    Converter("aten::clamp_min_.default", aten_clamp_min),
    Converter("aten::clamp_min_.Tensor", aten_clamp_min),
    Converter("aten::clamp_max.default", aten_clamp_max),
    Converter("aten::clamp_max.Tensor", aten_clamp_max),
    Converter("aten::clamp_max_.default", aten_clamp_max),
    Converter("aten::clamp_max_.Tensor", aten_clamp_max),
    Converter("aten::lerp.Scalar", aten_lerp),
    Converter("aten::lerp.Tensor", aten_lerp),
    Converter("aten::lerp_.Scalar", aten_lerp),
    Converter("aten::lerp_.Tensor", aten_lerp),
    Converter("aten::addcmul.default", aten_addcmul),
    Converter("aten::addcmul_.default", aten_addcmul),
    Converter("aten::addcdiv.default", aten_addcdiv),
    Converter("aten::addcdiv_.default", aten_addcdiv),
    Converter("aten::_to_copy.default", aten__to_copy),
    Converter("aten::to.dtype", aten_to_dtype),
    Converter("aten::to.dtype_layout", aten_to_dtype_layout),
    Converter("aten::to.device", aten_to_device),
    Converter("aten::to.other", aten_to_other),
    Converter("aten::type_as.default", aten_type_as),
    Converter("aten::copy.default", aten_copy),
    Converter("aten::copy_.default", aten_copy),
)
