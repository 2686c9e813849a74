"""Element-wise prims: unary math, binary arithmetic, comparisons, bitwise ops, where.

Prims do no type promotion: every tensor operand already has the dtype the op computes in
(``prims.add(int32, float32)`` raises in torch), and python scalars take that dtype. So a
converter computes in its operands' dtype, the result dtype for arithmetic
(``sts.dtype``), the first tensor operand's dtype for comparisons (which return bool).
``prims.div`` truncates integers, as ONNX ``Div`` does. Float16/bfloat16 compute in float32
and round once at the end, as torch's CPU kernels ("opmath") do; for ``+ - * /`` and
``sqrt`` that is also the correctly rounded half-precision result.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, is_float, numpy_dtype, operand, quadrant_atan, trunc

from . import _special

BOOL = TensorProto.BOOL
FLOAT = TensorProto.FLOAT
INT32 = TensorProto.INT32
_REDUCED = (TensorProto.FLOAT16, TensorProto.BFLOAT16)
_SMALL_INTS = (TensorProto.INT8, TensorProto.INT16, TensorProto.UINT8, TensorProto.UINT16)


# -- helpers ----------------------------------------------------------------------------------


def _const(value, elem: int) -> np.ndarray:
    return np.array(value, dtype=numpy_dtype(elem))


def _operand_type(g, *values) -> int:
    """ONNX type of the first tensor operand (prims check that all of them share it)."""
    for value in values:
        if type(value) is str:
            return g.get_type(value)
    raise UnsupportedError("An element-wise prim without a tensor operand.")


def _compute_type(elem: int) -> int:
    """float32 for half types; int32 for 8/16-bit integers (onnxruntime has few kernels for
    them), whose results wrap back to the type exactly as torch's do."""
    if elem in _REDUCED:
        return FLOAT
    return INT32 if elem in _SMALL_INTS else elem


def _inputs(g, values, elem: int) -> list[str]:
    """Operands as tensors of ``elem``, widened to float32 for float16/bfloat16."""
    return [cast(g, operand(g, v, elem), _compute_type(elem)) for v in values]


def _finish(g, x: str, elem: int, outputs) -> str:
    """``x`` (computed in float32 for half types) as the result named ``outputs``."""
    if g.get_type(x) == elem:
        return g.op.Identity(x, outputs=outputs)  # the identity pass removes it
    return g.op.Cast(x, to=elem, outputs=outputs)


def _node(g, op_type: str, values, elem: int, outputs, **attributes) -> str:
    """One ONNX op on the operands in ``elem``; half types through float32."""
    inputs = _inputs(g, values, elem)
    if _compute_type(elem) == elem:
        return g.make_node(op_type, inputs, outputs, **attributes)
    return g.op.Cast(g.make_node(op_type, inputs, **attributes), to=elem, outputs=outputs)


def _float_only(sts, name: str) -> int:
    elem = sts.dtype
    if not is_float(elem):
        raise UnsupportedError(f"prims.{name} on {elem} (ONNX type): only floating types.")
    return elem


# -- unary: one ONNX op -----------------------------------------------------------------------


def _unary(g, sts, outputs, op_type: str, self, *, integer_identity: bool = False) -> str:
    """``op_type`` on a float or (when ONNX has it) integer tensor; ints pass through for
    rounding functions (``floor(int)`` is the int)."""
    elem = sts.dtype
    if elem == BOOL:
        raise UnsupportedError(f"prims {op_type.lower()} of a bool tensor: torch raises too.")
    if not is_float(elem) and integer_identity:
        return self
    return _node(g, op_type, [self], elem, outputs)


# prims::abs.default
def prims_abs(g, sts, outputs, self):
    "abs(Tensor self) -> Tensor"
    return _unary(g, sts, outputs, "Abs", self)


# prims::neg.default
def prims_neg(g, sts, outputs, self):
    "neg(Tensor self) -> Tensor"
    return _unary(g, sts, outputs, "Neg", self)


def _float_unary(g, sts, outputs, op_type: str, self, name: str) -> str:
    return _node(g, op_type, [self], _float_only(sts, name), outputs)


# prims::exp.default
def prims_exp(g, sts, outputs, self):
    "exp(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Exp", self, "exp")


# prims::log.default
def prims_log(g, sts, outputs, self):
    "log(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Log", self, "log")


# prims::sqrt.default
def prims_sqrt(g, sts, outputs, self):
    "sqrt(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Sqrt", self, "sqrt")


# prims::reciprocal.default
def prims_reciprocal(g, sts, outputs, self):
    "reciprocal(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Reciprocal", self, "reciprocal")


# prims::sin.default
def prims_sin(g, sts, outputs, self):
    "sin(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Sin", self, "sin")


# prims::cos.default
def prims_cos(g, sts, outputs, self):
    "cos(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Cos", self, "cos")


# prims::tan.default
def prims_tan(g, sts, outputs, self):
    "tan(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Tan", self, "tan")


# prims::asin.default
def prims_asin(g, sts, outputs, self):
    "asin(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Asin", self, "asin")


# prims::acos.default
def prims_acos(g, sts, outputs, self):
    "acos(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Acos", self, "acos")


# prims::atan.default
def prims_atan(g, sts, outputs, self):
    "atan(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Atan", self, "atan")


# prims::sinh.default
def prims_sinh(g, sts, outputs, self):
    "sinh(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Sinh", self, "sinh")


# prims::cosh.default
def prims_cosh(g, sts, outputs, self):
    "cosh(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Cosh", self, "cosh")


# prims::tanh.default
def prims_tanh(g, sts, outputs, self):
    "tanh(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Tanh", self, "tanh")


# prims::asinh.default
def prims_asinh(g, sts, outputs, self):
    "asinh(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Asinh", self, "asinh")


# prims::acosh.default
def prims_acosh(g, sts, outputs, self):
    "acosh(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Acosh", self, "acosh")


# prims::atanh.default
def prims_atanh(g, sts, outputs, self):
    "atanh(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Atanh", self, "atanh")


# prims::erf.default
def prims_erf(g, sts, outputs, self):
    "erf(Tensor self) -> Tensor"
    return _float_unary(g, sts, outputs, "Erf", self, "erf")


# prims::floor.default
def prims_floor(g, sts, outputs, self):
    "floor(Tensor self) -> Tensor"
    return _unary(g, sts, outputs, "Floor", self, integer_identity=True)


# prims::ceil.default
def prims_ceil(g, sts, outputs, self):
    "ceil(Tensor self) -> Tensor"
    return _unary(g, sts, outputs, "Ceil", self, integer_identity=True)


# prims::round.default
def prims_round(g, sts, outputs, self):
    "round(Tensor self) -> Tensor"
    # torch and ONNX both round half to even
    return _unary(g, sts, outputs, "Round", self, integer_identity=True)


# prims::bitwise_not.default
def prims_bitwise_not(g, sts, outputs, self):
    "bitwise_not(Tensor self) -> Tensor"
    if sts.dtype == BOOL:
        return g.op.Not(self, outputs=outputs)
    if is_float(sts.dtype):
        raise UnsupportedError("prims.bitwise_not on a floating tensor (torch raises).")
    return g.op.BitwiseNot(self, outputs=outputs)


# -- unary: formulas ------------------------------------------------------------------------


def _formula(g, sts, outputs, self, name: str, build) -> str:
    """``build(g, x)`` on the float input (float32 for half types), rounded once."""
    elem = _float_only(sts, name)
    return _finish(g, build(g, _inputs(g, [self], elem)[0]), elem, outputs)


# prims::rsqrt.default
def prims_rsqrt(g, sts, outputs, self):
    "rsqrt(Tensor self) -> Tensor"
    return _formula(g, sts, outputs, self, "rsqrt", lambda g, x: g.op.Reciprocal(g.op.Sqrt(x)))


# prims::trunc.default
def prims_trunc(g, sts, outputs, self):
    "trunc(Tensor self) -> Tensor"
    if not is_float(sts.dtype):
        return self
    return _formula(g, sts, outputs, self, "trunc", trunc)


# prims::exp2.default
def prims_exp2(g, sts, outputs, self):
    "exp2(Tensor self) -> Tensor"
    return _formula(g, sts, outputs, self, "exp2", lambda g, x: g.op.Pow(_like(g, 2.0, x), x))


# prims::log2.default
def prims_log2(g, sts, outputs, self):
    "log2(Tensor self) -> Tensor"
    return _formula(g, sts, outputs, self, "log2", lambda g, x: _log_base(g, x, 2.0))


# prims::log10.default
def prims_log10(g, sts, outputs, self):
    "log10(Tensor self) -> Tensor"
    return _formula(g, sts, outputs, self, "log10", lambda g, x: _log_base(g, x, 10.0))


def _like(g, value, x: str) -> np.ndarray:
    return _const(value, g.get_type(x))


def _log_base(g, x: str, base: float) -> str:
    # computed in double then rounded: log(x) / log(base) is within one rounding of torch
    wide = cast(g, x, TensorProto.DOUBLE)
    return cast(g, g.op.Div(g.op.Log(wide), _const(math.log(base), TensorProto.DOUBLE)), g.get_type(x))


# prims::expm1.default
def prims_expm1(g, sts, outputs, self):
    "expm1(Tensor self) -> Tensor"
    return _formula(g, sts, outputs, self, "expm1", _expm1)


def _expm1(g, x: str) -> str:
    """exp(x) - 1 without cancellation: (u - 1) * x / log(u) with u = exp(x) (Kahan)."""
    u = g.op.Exp(x)
    um1 = g.op.Sub(u, _like(g, 1, x))
    r = g.op.Div(g.op.Mul(um1, x), g.op.Log(u))
    r = g.op.Where(g.op.Equal(um1, _like(g, -1, x)), um1, r)
    r = g.op.Where(g.op.Equal(u, _like(g, 1, x)), x, r)
    return g.op.Where(g.op.IsInf(u), u, r)


# prims::log1p.default
def prims_log1p(g, sts, outputs, self):
    "log1p(Tensor self) -> Tensor"
    return _formula(g, sts, outputs, self, "log1p", _log1p)


def _log1p(g, x: str) -> str:
    """log(1 + x) without cancellation: log(u) * x / (u - 1) with u = 1 + x (Kahan)."""
    u = g.op.Add(x, _like(g, 1, x))
    r = g.op.Mul(g.op.Log(u), g.op.Div(x, g.op.Sub(u, _like(g, 1, x))))
    r = g.op.Where(g.op.Equal(u, _like(g, 1, x)), x, r)
    return g.op.Where(g.op.IsInf(x, detect_negative=0), x, r)


# prims::sign.default
def prims_sign(g, sts, outputs, self):
    "sign(Tensor self) -> Tensor"
    elem = sts.dtype
    if elem == BOOL:
        return self
    if not is_float(elem):
        return g.op.Sign(self, outputs=outputs)
    # torch's sign is (0 < x) - (x < 0): 0 for nan, where ONNX Sign gives nan
    x = _inputs(g, [self], elem)[0]
    signed = g.op.Where(g.op.IsNaN(x), _like(g, 0, x), g.op.Sign(x))
    return _finish(g, signed, elem, outputs)


# prims::isfinite.default
def prims_isfinite(g, sts, outputs, self):
    "isfinite(Tensor self) -> Tensor"
    elem = _operand_type(g, self)
    if not is_float(elem):
        return g.op.Expand(np.array(True), g.op.Shape(self), outputs=outputs)
    x = cast(g, self, _compute_type(elem))
    return g.op.Not(g.op.Or(g.op.IsNaN(x), g.op.IsInf(x)), outputs=outputs)


# prims::signbit.default
def prims_signbit(g, sts, outputs, self):
    "signbit(Tensor self) -> Tensor"
    # eager returns bool, torch's meta function the input's dtype: the graph holds the latter
    elem = _operand_type(g, self)
    if elem == BOOL:
        negative = g.op.Expand(np.array(False), g.op.Shape(self))
    elif not is_float(elem):
        negative = g.op.Less(self, _const(0, elem))
    elif g.main_opset < 26:
        raise UnsupportedError(
            "prims.signbit of a floating tensor below opset 26: no ONNX op before BitCast "
            "(opset 26) reads the sign bit of a NaN (torch.signbit(0.0 / 0.0) is True on x86). "
            "Export with target_opset=26, or compare with zero (x < 0) when NaN cannot occur."
        )
    else:
        width = {TensorProto.DOUBLE: TensorProto.INT64, FLOAT: TensorProto.INT32}.get(elem, TensorProto.INT16)
        negative = g.op.Less(g.op.BitCast(self, to=width), _const(0, width))
    return g.op.Cast(negative, to=sts.dtype, outputs=outputs)


def _float64_formula(g, sts, outputs, self, name: str, build) -> str:
    """``build(g, x)`` on the input widened to float64, rounded once to the result type."""
    elem = _float_only(sts, name)
    return _finish(g, build(g, cast(g, self, TensorProto.DOUBLE)), elem, outputs)


# prims::erfcx.default
def prims_erfcx(g, sts, outputs, self):
    "erfcx(Tensor self) -> Tensor"
    # float64 series and continued fraction; measured error in _special's docstring
    return _float64_formula(g, sts, outputs, self, "erfcx", _special.erfcx)


# prims::erf_inv.default
def prims_erf_inv(g, sts, outputs, self):
    "erf_inv(Tensor self) -> Tensor"
    # torch's initial approximation and two Newton steps in float64; error in _special
    return _float64_formula(g, sts, outputs, self, "erf_inv", _special.erfinv)


# -- binary arithmetic ------------------------------------------------------------------------


# prims::add.default
def prims_add(g, sts, outputs, self, other):
    "add(Tensor self, Tensor other) -> Tensor"
    if sts.dtype == BOOL:
        return g.op.Or(*_inputs(g, [self, other], BOOL), outputs=outputs)
    return _node(g, "Add", [self, other], sts.dtype, outputs)


# prims::sub.default
def prims_sub(g, sts, outputs, self, other):
    "sub(Tensor self, Tensor other) -> Tensor"
    if sts.dtype == BOOL:
        raise UnsupportedError("prims.sub on bool tensors (torch raises).")
    return _node(g, "Sub", [self, other], sts.dtype, outputs)


# prims::mul.default
def prims_mul(g, sts, outputs, self, other):
    "mul(Tensor self, Tensor other) -> Tensor"
    if sts.dtype == BOOL:
        return g.op.And(*_inputs(g, [self, other], BOOL), outputs=outputs)
    return _node(g, "Mul", [self, other], sts.dtype, outputs)


# prims::div.default
def prims_div(g, sts, outputs, self, other):
    "div(Tensor self, Tensor other) -> Tensor"
    # integers: truncation division, which is what ONNX Div does on integers
    if sts.dtype == BOOL:
        raise UnsupportedError("prims.div on bool tensors.")
    return _node(g, "Div", [self, other], sts.dtype, outputs)


# prims::pow.default
def prims_pow(g, sts, outputs, self, other):
    "pow(Tensor self, Tensor other) -> Tensor"
    if sts.dtype == BOOL:
        raise UnsupportedError("prims.pow on bool tensors.")
    return _node(g, "Pow", [self, other], sts.dtype, outputs)


# prims::maximum.default
def prims_maximum(g, sts, outputs, self, other):
    "maximum(Tensor self, Tensor other) -> Tensor"
    # Max and Min propagate nan like torch.maximum/minimum
    op_type = "Or" if sts.dtype == BOOL else "Max"
    return _node(g, op_type, [self, other], sts.dtype, outputs)


# prims::minimum.default
def prims_minimum(g, sts, outputs, self, other):
    "minimum(Tensor self, Tensor other) -> Tensor"
    op_type = "And" if sts.dtype == BOOL else "Min"
    return _node(g, op_type, [self, other], sts.dtype, outputs)


def _nan_ignoring(g, sts, outputs, op_type: str, self, other) -> str:
    """fmax/fmin: the other operand where one is nan (nan only where both are)."""
    elem = sts.dtype
    if elem == BOOL:
        op_type = "Or" if op_type == "Max" else "And"
    if not is_float(elem):
        return _node(g, op_type, [self, other], elem, outputs)
    a, b = _inputs(g, [self, other], elem)
    picked = g.op.Where(g.op.IsNaN(a), b, g.op.Where(g.op.IsNaN(b), a, g.make_node(op_type, [a, b])))
    return _finish(g, picked, elem, outputs)


# prims::fmax.default
def prims_fmax(g, sts, outputs, self, other):
    "fmax(Tensor self, Tensor other) -> Tensor"
    return _nan_ignoring(g, sts, outputs, "Max", self, other)


# prims::fmin.default
def prims_fmin(g, sts, outputs, self, other):
    "fmin(Tensor self, Tensor other) -> Tensor"
    return _nan_ignoring(g, sts, outputs, "Min", self, other)


# prims::fmod.default
def prims_fmod(g, sts, outputs, self, other):
    "fmod(Tensor self, Tensor other) -> Tensor"
    return _node(g, "Mod", [self, other], sts.dtype, outputs, fmod=1)


# prims::remainder.default
def prims_remainder(g, sts, outputs, self, other):
    "remainder(Tensor self, Tensor other) -> Tensor"
    elem = sts.dtype
    if not is_float(elem):
        # Mod with fmod=0 follows Python's sign rule (the divisor's), like torch
        return _node(g, "Mod", [self, other], elem, outputs, fmod=0)
    a, b = _inputs(g, [self, other], elem)
    mod = g.op.Mod(a, b, fmod=1)
    zero = _like(g, 0, mod)
    wrong_sign = g.op.And(
        g.op.Not(g.op.Equal(mod, zero)), g.op.Xor(g.op.Less(b, zero), g.op.Less(mod, zero))
    )
    return _finish(g, g.op.Where(wrong_sign, g.op.Add(mod, b), mod), elem, outputs)


# prims::atan2.default
def prims_atan2(g, sts, outputs, self, other):
    "atan2(Tensor self, Tensor other) -> Tensor"
    elem = _float_only(sts, "atan2")
    y, x = _inputs(g, [self, other], elem)
    return _finish(g, quadrant_atan(g, y, x), elem, outputs)


# -- bitwise ----------------------------------------------------------------------------------


def _bitwise(g, sts, outputs, logical: str, bitwise: str, self, other) -> str:
    elem = sts.dtype
    if is_float(elem):
        raise UnsupportedError(f"prims.{bitwise.lower()} on a floating tensor (torch raises).")
    op_type = logical if elem == BOOL else bitwise
    return _node(g, op_type, [self, other], elem, outputs)


# prims::bitwise_and.default
def prims_bitwise_and(g, sts, outputs, self, other):
    "bitwise_and(Tensor self, Tensor other) -> Tensor"
    return _bitwise(g, sts, outputs, "And", "BitwiseAnd", self, other)


# prims::bitwise_or.default
def prims_bitwise_or(g, sts, outputs, self, other):
    "bitwise_or(Tensor self, Tensor other) -> Tensor"
    return _bitwise(g, sts, outputs, "Or", "BitwiseOr", self, other)


# prims::bitwise_xor.default
def prims_bitwise_xor(g, sts, outputs, self, other):
    "bitwise_xor(Tensor self, Tensor other) -> Tensor"
    return _bitwise(g, sts, outputs, "Xor", "BitwiseXor", self, other)


# -- comparisons ----------------------------------------------------------------------------


def _compare(g, sts, outputs, op_type: str, self, other, negate: bool = False) -> str:
    """A comparison in the operands' dtype (bool compared as int32 except for Equal)."""
    elem = _operand_type(g, self, other)
    a, b = _inputs(g, [self, other], elem)
    if elem == BOOL and op_type != "Equal":
        a, b = cast(g, a, INT32), cast(g, b, INT32)
    if negate:
        return g.op.Not(g.make_node(op_type, [a, b]), outputs=outputs)
    return g.make_node(op_type, [a, b], outputs)


# prims::eq.default
def prims_eq(g, sts, outputs, self, other):
    "eq(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "Equal", self, other)


# prims::ne.default
def prims_ne(g, sts, outputs, self, other):
    "ne(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "Equal", self, other, negate=True)


# prims::lt.default
def prims_lt(g, sts, outputs, self, other):
    "lt(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "Less", self, other)


# prims::le.default
def prims_le(g, sts, outputs, self, other):
    "le(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "LessOrEqual", self, other)


# prims::gt.default
def prims_gt(g, sts, outputs, self, other):
    "gt(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "Greater", self, other)


# prims::ge.default
def prims_ge(g, sts, outputs, self, other):
    "ge(Tensor self, Tensor other) -> Tensor"
    return _compare(g, sts, outputs, "GreaterOrEqual", self, other)


# -- where ------------------------------------------------------------------------------------


# prims::where.default
def prims_where(g, sts, outputs, pred, a, b):
    "where(Tensor pred, Tensor a, Tensor b) -> Tensor"
    elem = sts.dtype
    condition = operand(g, pred, BOOL)
    if elem == BOOL:  # onnxruntime has no bool Where
        picked = g.op.And(condition, operand(g, a, BOOL))
        other = g.op.And(g.op.Not(condition), operand(g, b, BOOL))
        return g.op.Or(picked, other, outputs=outputs)
    return g.op.Where(condition, operand(g, a, elem), operand(g, b, elem), outputs=outputs)


CONVERTERS = (
    Converter("prims::abs.default", prims_abs),
    Converter("prims::neg.default", prims_neg),
    Converter("prims::exp.default", prims_exp),
    Converter("prims::log.default", prims_log),
    Converter("prims::sqrt.default", prims_sqrt),
    Converter("prims::reciprocal.default", prims_reciprocal),
    Converter("prims::sin.default", prims_sin),
    Converter("prims::cos.default", prims_cos),
    Converter("prims::tan.default", prims_tan),
    Converter("prims::asin.default", prims_asin),
    Converter("prims::acos.default", prims_acos),
    Converter("prims::atan.default", prims_atan),
    Converter("prims::sinh.default", prims_sinh),
    Converter("prims::cosh.default", prims_cosh),
    Converter("prims::tanh.default", prims_tanh),
    Converter("prims::asinh.default", prims_asinh),
    Converter("prims::acosh.default", prims_acosh),
    Converter("prims::atanh.default", prims_atanh),
    Converter("prims::erf.default", prims_erf),
    Converter("prims::floor.default", prims_floor),
    Converter("prims::ceil.default", prims_ceil),
    Converter("prims::round.default", prims_round),
    Converter("prims::bitwise_not.default", prims_bitwise_not),
    Converter("prims::rsqrt.default", prims_rsqrt),
    Converter("prims::trunc.default", prims_trunc),
    Converter("prims::exp2.default", prims_exp2),
    Converter("prims::log2.default", prims_log2),
    Converter("prims::log10.default", prims_log10),
    Converter("prims::expm1.default", prims_expm1),
    Converter("prims::log1p.default", prims_log1p),
    Converter("prims::sign.default", prims_sign),
    Converter("prims::isfinite.default", prims_isfinite),
    Converter("prims::signbit.default", prims_signbit),
    Converter("prims::erfcx.default", prims_erfcx),
    Converter("prims::erf_inv.default", prims_erf_inv),
    Converter("prims::add.default", prims_add),
    Converter("prims::sub.default", prims_sub),
    Converter("prims::mul.default", prims_mul),
    Converter("prims::div.default", prims_div),
    Converter("prims::pow.default", prims_pow),
    Converter("prims::maximum.default", prims_maximum),
    Converter("prims::minimum.default", prims_minimum),
    Converter("prims::fmax.default", prims_fmax),
    Converter("prims::fmin.default", prims_fmin),
    Converter("prims::fmod.default", prims_fmod),
    Converter("prims::remainder.default", prims_remainder),
    Converter("prims::atan2.default", prims_atan2),
    Converter("prims::bitwise_and.default", prims_bitwise_and),
    Converter("prims::bitwise_or.default", prims_bitwise_or),
    Converter("prims::bitwise_xor.default", prims_bitwise_xor),
    Converter("prims::eq.default", prims_eq),
    Converter("prims::ne.default", prims_ne),
    Converter("prims::lt.default", prims_lt),
    Converter("prims::le.default", prims_le),
    Converter("prims::gt.default", prims_gt),
    Converter("prims::ge.default", prims_ge),
    Converter("prims::where.default", prims_where),
)
