"""Hypothesis tests of the element-wise prims: torch eager against onnxruntime.

The prims run eagerly through ``torch.ops.prims``; ``torch.export`` keeps them in the
graph. Ops sharing an input domain run as one exported model (one output per op). Prims
do no type promotion, so both operands are drawn with the same dtype.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_op, run_onnxruntime

P = torch.ops.prims

COVERS = {
    "prims::abs.default",
    "prims::neg.default",
    "prims::exp.default",
    "prims::log.default",
    "prims::sqrt.default",
    "prims::reciprocal.default",
    "prims::sin.default",
    "prims::cos.default",
    "prims::tan.default",
    "prims::asin.default",
    "prims::acos.default",
    "prims::atan.default",
    "prims::sinh.default",
    "prims::cosh.default",
    "prims::tanh.default",
    "prims::asinh.default",
    "prims::acosh.default",
    "prims::atanh.default",
    "prims::erf.default",
    "prims::floor.default",
    "prims::ceil.default",
    "prims::round.default",
    "prims::bitwise_not.default",
    "prims::rsqrt.default",
    "prims::trunc.default",
    "prims::exp2.default",
    "prims::log2.default",
    "prims::log10.default",
    "prims::expm1.default",
    "prims::log1p.default",
    "prims::sign.default",
    "prims::isfinite.default",
    "prims::add.default",
    "prims::sub.default",
    "prims::mul.default",
    "prims::div.default",
    "prims::pow.default",
    "prims::maximum.default",
    "prims::minimum.default",
    "prims::fmax.default",
    "prims::fmin.default",
    "prims::fmod.default",
    "prims::remainder.default",
    "prims::atan2.default",
    "prims::bitwise_and.default",
    "prims::bitwise_or.default",
    "prims::bitwise_xor.default",
    "prims::eq.default",
    "prims::ne.default",
    "prims::lt.default",
    "prims::le.default",
    "prims::gt.default",
    "prims::ge.default",
    "prims::where.default",
    "prims::signbit.default",
    "prims::erfcx.default",
    "prims::erf_inv.default",
}

FLOATS = [torch.float32, torch.float64, torch.float16]
INTS = [torch.int64, torch.int32]
shapes = st.lists(st.integers(1, 4), max_size=4).map(tuple)
seeds = st.integers(0, 2**16)


def make(seed: int, shape, dtype: torch.dtype, low: float = -3.0, high: float = 3.0):
    """Values uniform in [low, high] (integers: rounded), deterministic in ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    values = torch.rand(shape, generator=gen, dtype=torch.float64) * (high - low) + low
    return values.to(dtype) if dtype.is_floating_point else values.round().to(dtype)


def with_specials(t: torch.Tensor, seed: int) -> torch.Tensor:
    """Puts nan, inf, -inf, 0 and -0 at a few positions of a float tensor."""
    if t.numel() < 2:
        return t
    gen = torch.Generator().manual_seed(seed + 1)
    flat = t.clone().reshape(-1)
    specials = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0], dtype=t.dtype)
    where = torch.randperm(flat.numel(), generator=gen)[: min(flat.numel() // 2, 5)]
    flat[where] = specials[: len(where)]
    return flat.reshape(t.shape)


def tol(dtype: torch.dtype) -> dict:
    if dtype == torch.float16:
        return {"atol": 1e-2, "rtol": 1e-2}
    if dtype == torch.float64:
        return {"atol": 1e-10, "rtol": 1e-10}
    return {"atol": 1e-5, "rtol": 1e-5}


def _model(names: list[str]):
    ops = [getattr(P, name) for name in names]
    return lambda *ts: tuple(op(*ts) for op in ops)


def _keys(names: list[str]) -> list[str]:
    return [f"prims::{name}.default" for name in names]


UNARY = {
    # (op names, input domain, onnxruntime has double kernels for all of them)
    "real": (["abs", "neg", "exp", "sin", "cos", "tanh", "floor", "ceil", "round"], (-3, 3), True),
    "real_formulas": (["trunc", "sign", "expm1", "exp2", "rsqrt"], (-3, 3), True),
    "real_no_double": (["tan", "atan", "sinh", "cosh", "asinh", "erf"], (-3, 3), False),
    "positive": (["log", "sqrt", "reciprocal", "log2", "log10", "log1p"], (0.01, 6), True),
    "unit": (["asin", "acos", "atanh"], (-0.99, 0.99), False),
    "at_least_one": (["acosh"], (1, 6), False),
}


@pytest.mark.parametrize("group", sorted(UNARY))
@given(shape=shapes, dtype=st.sampled_from(FLOATS), seed=seeds)
def test_unary(group, shape, dtype, seed):
    names, (low, high), has_double = UNARY[group]
    x = make(seed, shape, dtype, low, high)
    if dtype == torch.float64 and not has_double:
        # onnxruntime lacks double kernels for these ONNX ops; the reference evaluator runs them
        check_op(_model(names), [x], expect_op=_keys(names), runtime="reference", atol=1e-6, rtol=1e-6)
    else:
        check_op(_model(names), [x], expect_op=_keys(names), **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from(FLOATS), seed=seeds)
def test_unary_specials(shape, dtype, seed):
    """nan, infinities and signed zeros through the functions that must keep them."""
    x = with_specials(make(seed, shape, dtype), seed)
    names = ["abs", "neg", "floor", "ceil", "round", "trunc", "sign", "exp", "isfinite"]
    check_op(_model(names), [x], expect_op=_keys(names), **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from([*INTS, torch.bool]), seed=seeds)
def test_unary_integers(shape, dtype, seed):
    x = make(seed, shape, dtype, -50, 50)
    names = ["sign", "isfinite", "bitwise_not"]
    if dtype != torch.bool:  # torch raises for these on bool
        names += ["abs", "neg", "floor", "ceil", "round", "trunc"]
    check_op(_model(names), [x], expect_op=_keys(names))


ARITH = ["add", "sub", "mul", "div", "maximum", "minimum", "fmax", "fmin", "fmod", "remainder"]


@given(shape=shapes, dtype=st.sampled_from(FLOATS), specials=st.booleans(), seed=seeds)
def test_binary_floats(shape, dtype, specials, seed):
    a, b = make(seed, shape, dtype, -5, 5), make(seed + 7, shape, dtype, -5, 5)
    if specials:
        a, b = with_specials(a, seed), with_specials(b, seed + 3)
    check_op(_model(ARITH), [a, b], expect_op=_keys(ARITH), **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from(FLOATS), seed=seeds)
def test_atan2(shape, dtype, seed):
    """Every quadrant, signed zeros and infinities."""
    y, x = with_specials(make(seed, shape, dtype), seed), with_specials(make(seed + 1, shape, dtype), seed + 2)
    if dtype == torch.float64:  # onnxruntime has no double Atan
        check_op(P.atan2, [y, x], expect_op="prims::atan2.default", runtime="reference", **tol(dtype))
    else:
        check_op(P.atan2, [y, x], expect_op="prims::atan2.default", **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from(FLOATS), seed=seeds)
def test_pow(shape, dtype, seed):
    base, exponent = make(seed, shape, dtype, 0.1, 4), make(seed + 1, shape, dtype, -3, 3)
    check_op(P.pow, [base, exponent], expect_op="prims::pow.default", **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from([*INTS, torch.int8, torch.int16]), seed=seeds)
def test_binary_integers(shape, dtype, seed):
    """div truncates toward zero; remainder follows the divisor's sign, fmod the dividend's;
    8/16-bit results wrap like torch's."""
    a = make(seed, shape, dtype, -60, 60)
    b = make(seed + 1, shape, dtype, 1, 9) * (2 * (make(seed + 2, shape, torch.bool).to(dtype)) - 1)
    exponent = make(seed + 3, shape, dtype, 0, 3)
    names = ["add", "sub", "mul", "div", "maximum", "minimum", "fmax", "fmin", "fmod", "remainder"]

    def model(a, b, exponent):
        return (*_model(names)(a, b), P.pow(a, exponent))

    check_op(model, [a, b, exponent], expect_op=_keys([*names, "pow"]))


@given(
    shape=shapes,
    dtype=st.sampled_from([*FLOATS, *INTS]),
    scalar=st.integers(-4, 4).filter(bool),
    seed=seeds,
)
def test_python_scalar_operand(shape, dtype, scalar, seed):
    """A python scalar operand takes the tensor's dtype (prims do not promote)."""
    x = make(seed, shape, dtype, -5, 5)
    value = float(scalar) if dtype.is_floating_point else scalar

    def model(t):
        return P.add(t, value), P.mul(t, value), P.div(t, value), P.lt(t, value), P.maximum(t, value)

    check_op(model, [x], expect_op=_keys(["add", "mul", "div", "lt", "maximum"]), **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from([*FLOATS, *INTS, torch.bool]), seed=seeds)
def test_comparisons(shape, dtype, seed):
    a, b = make(seed, shape, dtype, -2, 2), make(seed + 1, shape, dtype, -2, 2)
    if dtype.is_floating_point:
        a = with_specials(a, seed)
    names = ["eq", "ne", "lt", "le", "gt", "ge"]
    check_op(_model(names), [a, b], expect_op=_keys(names))


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    dtype=st.sampled_from([torch.uint8, torch.int8, torch.int16]),
    seed=seeds,
)
def test_small_integers(shape, dtype, seed):
    """8/16-bit integers (few onnxruntime kernels) computed wider and wrapped back."""
    a, b = make(seed, shape, dtype, 0, 120), make(seed + 1, shape, dtype, 1, 9)
    names = ["add", "sub", "mul", "div", "remainder", "maximum", "lt", "bitwise_and", "abs"]

    def model(a, b):
        # eager prims.sum returns int64, the graph (torch's meta) the input dtype
        return (*_model(names[:-1])(a, b), P.abs(a), P.sum(a, [0]).to(dtype), P.amax(b, [0]))

    check_op(model, [a, b], expect_op=_keys([*names, "sum", "amax"]))


@given(shape=shapes, dtype=st.sampled_from([*INTS, torch.uint8, torch.bool]), seed=seeds)
def test_bitwise(shape, dtype, seed):
    a, b = make(seed, shape, dtype, 0, 100), make(seed + 1, shape, dtype, 0, 100)
    if dtype != torch.uint8:
        a = a - make(seed + 2, shape, dtype, 0, 1) if dtype != torch.bool else a
    names = ["bitwise_and", "bitwise_or", "bitwise_xor"]
    if dtype == torch.bool:
        names += ["add", "mul", "maximum", "minimum"]  # logical or/and on bool
    check_op(_model(names), [a, b], expect_op=_keys(names))


@given(shape=shapes, dtype=st.sampled_from([*FLOATS, *INTS, torch.bool]), seed=seeds)
def test_where(shape, dtype, seed):
    pred = make(seed, shape, torch.bool)
    a, b = make(seed + 1, shape, dtype), make(seed + 2, shape, dtype)
    check_op(P.where, [pred, a, b], expect_op="prims::where.default")


@given(shape=shapes, seed=seeds)
def test_bfloat16(shape, seed):
    """bfloat16 computes in float32 and rounds once, as torch's kernels do (run in onnx's
    reference evaluator: onnxruntime's python API takes no bfloat16 input)."""
    a = make(seed, shape, torch.bfloat16, 0.1, 4)
    b = make(seed + 1, shape, torch.bfloat16, 0.1, 4)
    names = ["add", "sub", "mul", "div", "maximum", "pow", "remainder"]
    unary = ["exp", "log", "sqrt", "rsqrt", "tanh", "sin", "floor", "neg"]

    def model(a, b):
        return (*_model(names)(a, b), *_model(unary)(a), P.lt(a, b))

    keys = _keys([*names, *unary, "lt"])
    check_op(model, [a, b], expect_op=keys, runtime="reference", atol=1e-2, rtol=1e-2)


# -- signbit, erfcx, erf_inv ------------------------------------------------------------------


@given(shape=shapes, dtype=st.sampled_from([*INTS, torch.int8, torch.uint8, torch.bool]), seed=seeds)
def test_signbit_of_integers(shape, dtype, seed):
    x = make(seed, shape, dtype, -50, 50) if dtype != torch.uint8 else make(seed, shape, dtype, 0, 250)
    # eager's bool, the graph's (meta) int: compared as int32
    check_op(lambda t: P.signbit(t).to(torch.int32) * 2, [x], expect_op="prims::signbit.default")


@given(shape=shapes, dtype=st.sampled_from(FLOATS), seed=seeds)
def test_signbit_of_floats_at_opset_26(shape, dtype, seed):
    """BitCast reads the sign bit: -0.0, -inf and a negative NaN (x86's 0/0) included."""
    x = with_specials(make(seed, shape, dtype), seed)
    if x.numel() > 1:
        x.reshape(-1)[-1] = torch.tensor(0.0, dtype=dtype) / 0.0  # the sign bit set on x86
    check_op(lambda t: P.signbit(t).to(torch.int32) * 2, [x], expect_op="prims::signbit.default", target_opset=26)


def test_signbit_of_floats_below_opset_26_is_refused():
    with pytest.raises(tonnx.UnsupportedError, match="opset 26"):
        check_op(P.signbit, [torch.tensor([1.0, -0.0])], expect_op="prims::signbit.default")


@given(shape=shapes, dtype=st.sampled_from([torch.float32, torch.float64]), seed=seeds)
def test_erfcx(shape, dtype, seed):
    x = with_specials(make(seed, shape, dtype, -9, 30), seed)
    check_op(P.erfcx, [x], expect_op="prims::erfcx.default", **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from(FLOATS), seed=seeds)
def test_erf_inv(shape, dtype, seed):
    x = make(seed, shape, dtype, -1.2, 1.2)
    if x.numel() > 3:
        x.reshape(-1)[:3] = torch.tensor([1.0, -1.0, math.nan])
    check_op(P.erf_inv, [x], expect_op="prims::erf_inv.default", **tol(dtype))


def test_erfcx_and_erf_inv_errors_as_documented():
    """The figures of tonnx_prims._special's docstring, measured on dense float64 grids."""
    x = torch.cat([torch.linspace(-26, 30, 100_001, dtype=torch.float64), torch.logspace(0, 4, 100_000, dtype=torch.float64)])
    y = torch.linspace(-1, 1, 200_001, dtype=torch.float64)[1:-1]
    model = check_op(lambda a, b: (P.erfcx(a), P.erf_inv(b)), [x, y], expect_op=["prims::erfcx.default"], atol=0, rtol=1e-12)
    got = run_onnxruntime(model, [x, y])
    erfcx_error = np.max(np.abs(got[0] - P.erfcx(x).numpy()) / P.erfcx(x).numpy())
    erfinv_error = np.max(np.abs(got[1] - P.erf_inv(y).numpy()))
    print(f"\nerfcx max relative error {erfcx_error:.2g}, erfinv max absolute error {erfinv_error:.2g}")
    assert erfcx_error < 3e-13 and erfinv_error < 1e-12
