"""Hypothesis tests of the element-wise binary converters: torch eager against onnxruntime.

Related ops run as one exported model (one output per op), on inputs of drawn shapes
(broadcast against each other), dtypes (type promotion included) and values.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import check_model, check_op

aten = torch.ops.aten

COVERS = {
    "aten::add.Tensor",
    "aten::add.Scalar",
    "aten::add_.Tensor",
    "aten::add_.Scalar",
    "aten::sub.Tensor",
    "aten::sub.Scalar",
    "aten::sub_.Tensor",
    "aten::sub_.Scalar",
    "aten::rsub.Tensor",
    "aten::rsub.Scalar",
    "aten::mul.Tensor",
    "aten::mul.Scalar",
    "aten::mul_.Tensor",
    "aten::mul_.Scalar",
    "aten::div.Tensor",
    "aten::div.Scalar",
    "aten::div_.Tensor",
    "aten::div_.Scalar",
    "aten::div.Tensor_mode",
    "aten::div.Scalar_mode",
    "aten::div_.Tensor_mode",
    "aten::div_.Scalar_mode",
    "aten::true_divide.Tensor",
    "aten::true_divide.Scalar",
    "aten::true_divide_.Tensor",
    "aten::true_divide_.Scalar",
    "aten::floor_divide.default",
    "aten::floor_divide.Scalar",
    "aten::floor_divide_.Tensor",
    "aten::floor_divide_.Scalar",
    "aten::remainder.Tensor",
    "aten::remainder.Scalar",
    "aten::remainder_.Tensor",
    "aten::remainder_.Scalar",
    "aten::remainder.Scalar_Tensor",
    "aten::fmod.Tensor",
    "aten::fmod.Scalar",
    "aten::fmod_.Tensor",
    "aten::fmod_.Scalar",
    "aten::pow.Tensor_Tensor",
    "aten::pow.Tensor_Scalar",
    "aten::pow.Scalar",
    "aten::pow_.Tensor",
    "aten::pow_.Scalar",
    "aten::maximum.default",
    "aten::minimum.default",
    "aten::max.other",
    "aten::min.other",
    "aten::atan2.default",
    "aten::atan2_.default",
    "aten::eq.Tensor",
    "aten::eq.Scalar",
    "aten::eq_.Tensor",
    "aten::eq_.Scalar",
    "aten::ne.Tensor",
    "aten::ne.Scalar",
    "aten::ne_.Tensor",
    "aten::ne_.Scalar",
    "aten::lt.Tensor",
    "aten::lt.Scalar",
    "aten::lt_.Tensor",
    "aten::lt_.Scalar",
    "aten::le.Tensor",
    "aten::le.Scalar",
    "aten::le_.Tensor",
    "aten::le_.Scalar",
    "aten::gt.Tensor",
    "aten::gt.Scalar",
    "aten::gt_.Tensor",
    "aten::gt_.Scalar",
    "aten::ge.Tensor",
    "aten::ge.Scalar",
    "aten::ge_.Tensor",
    "aten::ge_.Scalar",
    "aten::logical_and.default",
    "aten::logical_and_.default",
    "aten::logical_or.default",
    "aten::logical_or_.default",
    "aten::logical_xor.default",
    "aten::logical_xor_.default",
    "aten::logical_not.default",
    "aten::logical_not_.default",
    "aten::bitwise_and.Tensor",
    "aten::bitwise_and.Scalar",
    "aten::bitwise_and_.Tensor",
    "aten::bitwise_and_.Scalar",
    "aten::bitwise_or.Tensor",
    "aten::bitwise_or.Scalar",
    "aten::bitwise_or_.Tensor",
    "aten::bitwise_or_.Scalar",
    "aten::bitwise_xor.Tensor",
    "aten::bitwise_xor.Scalar",
    "aten::bitwise_xor_.Tensor",
    "aten::bitwise_xor_.Scalar",
    "aten::bitwise_not.default",
    "aten::bitwise_not_.default",
    "aten::__and__.Tensor",
    "aten::__and__.Scalar",
    "aten::__or__.Tensor",
    "aten::__or__.Scalar",
    "aten::__xor__.Tensor",
    "aten::__xor__.Scalar",
    "aten::where.self",
    "aten::where.ScalarSelf",
    "aten::where.ScalarOther",
    "aten::where.Scalar",
    "aten::clamp.default",
    "aten::clamp.Tensor",
    "aten::clamp_.default",
    "aten::clamp_.Tensor",
    "aten::clamp_min.default",
    "aten::clamp_min.Tensor",
    "aten::clamp_min_.default",
    "aten::clamp_min_.Tensor",
    "aten::clamp_max.default",
    "aten::clamp_max.Tensor",
    "aten::clamp_max_.default",
    "aten::clamp_max_.Tensor",
    "aten::lerp.Scalar",
    "aten::lerp.Tensor",
    "aten::lerp_.Scalar",
    "aten::lerp_.Tensor",
    "aten::addcmul.default",
    "aten::addcmul_.default",
    "aten::addcdiv.default",
    "aten::addcdiv_.default",
    "aten::_to_copy.default",
    "aten::to.dtype",
    "aten::to.dtype_layout",
    "aten::to.device",
    "aten::to.other",
    "aten::type_as.default",
    "aten::copy.default",
    "aten::copy_.default",
}

FLOATS = [torch.float32, torch.float64, torch.float16]
INTS = [torch.int64, torch.int32]
NUMBERS = [*FLOATS, *INTS]
ALL = [*NUMBERS, torch.bool]
seeds = st.integers(0, 2**16)
shapes = st.lists(st.integers(1, 4), max_size=4).map(tuple)


@st.composite
def shape_pairs(draw, max_dims: int = 4) -> tuple:
    """Two shapes that broadcast: a suffix of one with some sizes set to 1, maybe swapped."""
    a = tuple(draw(st.lists(st.integers(1, 4), max_size=max_dims)))
    b = a[draw(st.integers(0, len(a))) :]
    b = tuple(1 if draw(st.booleans()) else d for d in b)
    return (b, a) if draw(st.booleans()) else (a, b)


def make(seed: int, shape, dtype: torch.dtype, low: float = -4.0, high: float = 4.0):
    """Values uniform in [low, high] (integers: rounded), deterministic in ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    values = torch.rand(shape, generator=gen, dtype=torch.float64) * (high - low) + low
    return values.to(dtype) if dtype.is_floating_point else values.round().to(dtype)


def nonzero(t: torch.Tensor) -> torch.Tensor:
    return torch.where(t == 0, torch.ones((), dtype=t.dtype), t)


def with_specials(t: torch.Tensor, seed: int) -> torch.Tensor:
    """Puts nan, inf, -inf, 0 and -0 at a few positions of a float tensor."""
    if not t.is_floating_point() or t.numel() < 2:
        return t
    gen = torch.Generator().manual_seed(seed + 1)
    flat = t.clone().reshape(-1)
    specials = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0], dtype=t.dtype)
    where = torch.randperm(flat.numel(), generator=gen)[: min(flat.numel() // 2, 5)]
    flat[where] = specials[: len(where)]
    return flat.reshape(t.shape)


def tol(*dtypes: torch.dtype) -> dict:
    if torch.float16 in dtypes:
        return {"atol": 1e-2, "rtol": 1e-2}
    return {"atol": 1e-5, "rtol": 1e-5}


def runs_in_torch(fn, *args) -> bool:
    """False for the calls torch itself rejects (bool subtraction, int to a float in place)."""
    try:
        fn(*args)
    except (RuntimeError, TypeError, NotImplementedError, ZeroDivisionError):
        return False
    return True


def check_ops(cases: list, tensors: list, **kwargs) -> None:
    """Exports the cases torch accepts as one model returning one output per case."""
    cases = [(key, fn) for key, fn in cases if runs_in_torch(fn, *tensors)]
    assert cases, "torch rejected every case"

    def model(*ts):
        return tuple(fn(*ts) for _, fn in cases)

    check_op(model, tensors, expect_op=sorted({key for key, _ in cases}), **kwargs)


def fresh(t: torch.Tensor) -> torch.Tensor:
    """A new intermediate equal to ``t`` (in-place ops on it are not functionalized)."""
    return t * 1 if t.dtype != torch.bool else t.logical_and(t)


scalars = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, -1.25, 2.5, 0.1, 1e-3]),
    st.booleans(),
)


# -- arithmetic -------------------------------------------------------------------------------


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)),
    alpha=st.sampled_from([1, 2, -1]),
    seed=seeds,
)
def test_add_sub_mul_div(shapes, dtypes, alpha, seed):
    a, b = make(seed, shapes[0], dtypes[0]), make(seed + 1, shapes[1], dtypes[1])
    cases = [
        ("aten::add.Tensor", lambda x, y: x + y),
        ("aten::add.Tensor", lambda x, y: torch.add(x, y, alpha=alpha)),
        ("aten::sub.Tensor", lambda x, y: torch.sub(x, y, alpha=alpha)),
        ("aten::rsub.Tensor", lambda x, y: torch.rsub(x, y, alpha=alpha)),
        ("aten::mul.Tensor", lambda x, y: x * y),
        ("aten::div.Tensor", lambda x, y: x / y),
        ("aten::true_divide.Tensor", lambda x, y: torch.true_divide(x, y)),
        ("aten::add_.Tensor", lambda x, y: fresh(x).add_(y, alpha=alpha)),
        ("aten::sub_.Tensor", lambda x, y: fresh(x).sub_(y)),
        ("aten::mul_.Tensor", lambda x, y: fresh(x).mul_(y)),
        ("aten::div_.Tensor", lambda x, y: fresh(x).div_(y)),
        ("aten::true_divide_.Tensor", lambda x, y: fresh(x).true_divide_(y)),
    ]
    check_ops(cases, [a, b], **tol(*dtypes))


@given(
    shape=shapes,
    dtype=st.sampled_from(ALL),
    scalar=scalars,
    alpha=st.sampled_from([1, 2]),
    seed=seeds,
)
def test_scalar_arithmetic(shape, dtype, scalar, alpha, seed):
    """Python scalars promote like torch: int32 + 2 is int32, int64 + 2.5 is float32."""
    x = make(seed, shape, dtype)
    s = scalar
    cases = [
        ("aten::add.Tensor", lambda t: t + s),
        ("aten::add.Scalar", lambda t: aten.add.Scalar(t, s, alpha)),
        ("aten::sub.Scalar", lambda t: aten.sub.Scalar(t, s, alpha)),
        ("aten::rsub.Scalar", lambda t: aten.rsub.Scalar(t, s, alpha)),
        ("aten::rsub.Scalar", lambda t: s - t),
        ("aten::mul.Tensor", lambda t: t * s),
        ("aten::mul.Scalar", lambda t: aten.mul.Scalar(t, s)),
        ("aten::div.Tensor", lambda t: t / s),
        ("aten::div.Scalar", lambda t: aten.div.Scalar(t, s)),
        ("aten::true_divide.Scalar", lambda t: aten.true_divide.Scalar(t, s)),
        ("aten::add_.Scalar", lambda t: aten.add_.Scalar(fresh(t), s, alpha)),
        ("aten::sub_.Scalar", lambda t: aten.sub_.Scalar(fresh(t), s, alpha)),
        ("aten::mul_.Scalar", lambda t: aten.mul_.Scalar(fresh(t), s)),
        ("aten::div_.Scalar", lambda t: aten.div_.Scalar(fresh(t), s)),
        ("aten::true_divide_.Scalar", lambda t: aten.true_divide_.Scalar(fresh(t), s)),
    ]
    check_ops(cases, [x], **tol(dtype))


@given(
    rows=st.integers(1, 3),
    scalar=st.sampled_from([0.1, 0.3, 3.0001, -7.7, 1 / 3]),
    alpha=st.sampled_from([0.3, -1.7, 2.0]),
    seed=seeds,
)
def test_float16_rounds_like_torch(rows, scalar, alpha, seed):
    """float16 results are bit-exact: scalars and opmath follow torch's CPU kernels.

    torch's own float16 results differ between its vectorized loops (float32 opmath) and
    the scalar loop it runs on the last elements and on small or broadcast tensors (float16
    arithmetic for add with alpha): the converters follow the vectorized loops, checked
    here on contiguous tensors of whole vectors (multiples of 64 elements). lerp and
    addcmul are left out: torch's vectorized kernels use fused multiply-adds, which ONNX
    cannot express (1-ulp differences).
    """
    a = make(seed, (rows, 64), torch.float16, -50.0, 50.0)
    b = make(seed + 1, (rows, 64), torch.float16, -3.0, 3.0)
    one, zero_d = b[:1, :1].clone(), b[0, 0].clone()  # one-element divisors
    full = torch.tensor(scalar, dtype=torch.float32)
    cases = [
        ("aten::mul.Tensor", lambda x, y, c, d: x * scalar),
        ("aten::mul.Tensor", lambda x, y, c, d: x * full),
        ("aten::div.Tensor", lambda x, y, c, d: x / scalar),
        ("aten::div.Tensor", lambda x, y, c, d: x / y),
        ("aten::add.Tensor", lambda x, y, c, d: x + scalar),
        ("aten::add.Tensor", lambda x, y, c, d: torch.add(x, y, alpha=alpha)),
        ("aten::sub.Tensor", lambda x, y, c, d: torch.sub(x, y, alpha=alpha)),
        ("aten::div.Tensor_mode", lambda x, y, c, d: torch.div(x, scalar, rounding_mode="floor")),
        ("aten::div.Tensor_mode", lambda x, y, c, d: torch.div(x, y, rounding_mode="floor")),
        ("aten::div.Tensor_mode", lambda x, y, c, d: torch.div(x, scalar, rounding_mode="trunc")),
        ("aten::div.Tensor_mode", lambda x, y, c, d: torch.div(x, y, rounding_mode="trunc")),
        ("aten::remainder.Scalar", lambda x, y, c, d: x % scalar),
        ("aten::pow.Tensor_Scalar", lambda x, y, c, d: y**scalar),
        ("aten::div.Tensor_mode", lambda x, y, c, d: torch.div(x, c, rounding_mode="trunc")),
        ("aten::div.Tensor_mode", lambda x, y, c, d: torch.div(x, d, rounding_mode="floor")),
    ]
    check_ops(cases, [a, b, one, zero_d], atol=0, rtol=0)


# -- division modes, remainder, pow ------------------------------------------------------------


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from(NUMBERS), st.sampled_from(NUMBERS)),
    multiples=st.booleans(),
    seed=seeds,
)
def test_division_modes(shapes, dtypes, multiples, seed):
    """trunc/floor division, remainder (Python's sign) and fmod (C's), exact for ints."""
    b = nonzero(make(seed + 1, shapes[1], dtypes[1]))
    if multiples:
        # quotients that are exactly or nearly integers: where floor(a / b) goes wrong
        k = make(seed, shapes[0], torch.float64, -20.0, 20.0).round()
        a = k * b.to(torch.float64) + make(seed, shapes[0], torch.float64, -1e-6, 1e-6)
        a = a.to(dtypes[0])
    else:
        a = make(seed, shapes[0], dtypes[0], -30.0, 30.0)
    cases = [
        ("aten::div.Tensor_mode", lambda x, y: torch.div(x, y, rounding_mode="trunc")),
        ("aten::div.Tensor_mode", lambda x, y: torch.div(x, y, rounding_mode="floor")),
        ("aten::div.Tensor_mode", lambda x, y: torch.div(x, y, rounding_mode=None)),
        ("aten::floor_divide.default", lambda x, y: x // y),
        ("aten::remainder.Tensor", lambda x, y: x % y),
        ("aten::fmod.Tensor", lambda x, y: torch.fmod(x, y)),
        ("aten::div_.Tensor_mode", lambda x, y: fresh(x).div_(y, rounding_mode="floor")),
        ("aten::floor_divide_.Tensor", lambda x, y: fresh(x).floor_divide_(y)),
        ("aten::remainder_.Tensor", lambda x, y: fresh(x).remainder_(y)),
        ("aten::fmod_.Tensor", lambda x, y: fresh(x).fmod_(y)),
    ]
    check_ops(cases, [a, b], **tol(*dtypes))


@given(
    shape=shapes,
    dtype=st.sampled_from(NUMBERS),
    scalar=st.sampled_from([3, -2, 0.75, -1.5, 7, 0.1]),
    mode=st.sampled_from(["trunc", "floor"]),
    seed=seeds,
)
def test_scalar_division_modes(shape, dtype, scalar, mode, seed):
    x = with_specials(make(seed, shape, dtype, -30.0, 30.0), seed)
    s = scalar
    cases = [
        ("aten::div.Scalar_mode", lambda t: aten.div.Scalar_mode(t, s, rounding_mode=mode)),
        (
            "aten::div_.Scalar_mode",
            lambda t: aten.div_.Scalar_mode(fresh(t), s, rounding_mode=mode),
        ),
        ("aten::floor_divide.Scalar", lambda t: aten.floor_divide.Scalar(t, s)),
        ("aten::floor_divide_.Scalar", lambda t: aten.floor_divide_.Scalar(fresh(t), s)),
        ("aten::remainder.Scalar", lambda t: t % s),
        ("aten::remainder_.Scalar", lambda t: fresh(t).remainder_(s)),
        ("aten::remainder.Scalar_Tensor", lambda t: aten.remainder.Scalar_Tensor(s, nonzero(t))),
        ("aten::fmod.Scalar", lambda t: torch.fmod(t, s)),
        ("aten::fmod_.Scalar", lambda t: fresh(t).fmod_(s)),
    ]
    check_ops(cases, [x], **tol(dtype))


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from(NUMBERS), st.sampled_from(NUMBERS)),
    exponent=st.sampled_from([0, 1, 2, 3, 5, 0.5, -0.5, -1, -2, 1.3, 2.0]),
    seed=seeds,
)
def test_pow(shapes, dtypes, exponent, seed):
    """Float pow (torch's special exponents), exact integer pow, scalar bases."""
    base = make(seed, shapes[0], dtypes[0], -4.0, 4.0)
    exps = make(seed + 1, shapes[1], dtypes[1], 0.0, 4.0)
    e = exponent
    cases = [
        (
            "aten::pow.Tensor_Tensor",
            lambda x, y: torch.pow(x.abs() if x.is_floating_point() else x, y),
        ),
        ("aten::pow.Tensor_Scalar", lambda x, y: x**e),
        ("aten::pow.Scalar", lambda x, y: 2**y),
        ("aten::pow.Scalar", lambda x, y: 1.5**y),
        ("aten::pow_.Tensor", lambda x, y: fresh(x).pow_(y)),
        ("aten::pow_.Scalar", lambda x, y: fresh(x).pow_(e)),
    ]
    check_ops(cases, [base, exps], **tol(*dtypes))


# -- maximum, minimum, atan2 --------------------------------------------------------------------


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)),
    seed=seeds,
)
def test_maximum_minimum(shapes, dtypes, seed):
    a = with_specials(make(seed, shapes[0], dtypes[0]), seed)
    b = with_specials(make(seed + 1, shapes[1], dtypes[1]), seed + 2)
    cases = [
        ("aten::maximum.default", torch.maximum),
        ("aten::minimum.default", torch.minimum),
        ("aten::max.other", torch.max),
        ("aten::min.other", torch.min),
    ]
    check_ops(cases, [a, b], **tol(*dtypes))


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from([*FLOATS, torch.int64]), st.sampled_from(FLOATS)),
    seed=seeds,
)
def test_atan2(shapes, dtypes, seed):
    """All quadrants, signed zeros and infinities (C's atan2 conventions)."""
    y = with_specials(make(seed, shapes[0], dtypes[0]), seed)
    x = with_specials(make(seed + 1, shapes[1], dtypes[1]), seed + 3)
    cases = [
        ("aten::atan2.default", torch.atan2),
        ("aten::atan2_.default", lambda a, b: fresh(a).atan2_(b)),
    ]
    # onnxruntime has no double Atan: the reference evaluator runs double
    runtime = "reference" if torch.float64 in dtypes else "onnxruntime"
    check_ops(cases, [y, x], runtime=runtime, **tol(*dtypes))


# -- comparisons, logic, bitwise ----------------------------------------------------------------


COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)),
    seed=seeds,
)
def test_comparisons(shapes, dtypes, seed):
    """Computed in the promoted dtype, returning bool (in place: self's dtype)."""
    a = make(seed, shapes[0], dtypes[0], -2.0, 2.0)
    b = make(seed + 1, shapes[1], dtypes[1], -2.0, 2.0)
    if a.is_floating_point():
        a = with_specials(a.round(), seed)
    cases = [(f"aten::{c}.Tensor", getattr(torch, c)) for c in COMPARISONS]
    cases += [(f"aten::{c}_.Tensor", _inplace(c)) for c in COMPARISONS]
    check_ops(cases, [a, b])


def _inplace(name: str, *args):
    return lambda x, *ys: getattr(fresh(x), name + "_")(*ys, *args)


@given(
    shape=shapes,
    dtype=st.sampled_from(ALL),
    scalar=st.one_of(
        st.integers(-2, 2), st.sampled_from([0.5, -1.0, 1.5, math.inf]), st.booleans()
    ),
    seed=seeds,
)
def test_scalar_comparisons(shape, dtype, scalar, seed):
    x = make(seed, shape, dtype, -2.0, 2.0)
    if x.is_floating_point():
        x = with_specials((x * 2).round() / 2, seed)
    cases = [
        (f"aten::{c}.Scalar", lambda t, c=c: getattr(torch, c)(t, scalar)) for c in COMPARISONS
    ]
    cases += [(f"aten::{c}_.Scalar", _inplace(c, scalar)) for c in COMPARISONS]
    check_ops(cases, [x])


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)),
    seed=seeds,
)
def test_logical(shapes, dtypes, seed):
    # integers and bools of -1, 0, 1; floats rounded to those, with nan, inf and -0
    a = with_specials(make(seed, shapes[0], dtypes[0], -1.0, 1.0), seed)
    b = make(seed + 1, shapes[1], dtypes[1], -1.0, 1.0)
    a, b = (t.round() if t.is_floating_point() else t for t in (a, b))
    cases = []
    for name in ("logical_and", "logical_or", "logical_xor"):
        cases += [(f"aten::{name}.default", getattr(torch, name))]
        cases += [(f"aten::{name}_.default", _inplace(name))]
    cases += [("aten::logical_not.default", lambda x, y: torch.logical_not(x))]
    cases += [("aten::logical_not_.default", lambda x, y: fresh(x).logical_not_())]
    check_ops(cases, [a, b])


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from([*INTS, torch.bool]), st.sampled_from([*INTS, torch.bool])),
    scalar=st.one_of(st.integers(-9, 9), st.booleans()),
    seed=seeds,
)
def test_bitwise(shapes, dtypes, scalar, seed):
    a = make(seed, shapes[0], dtypes[0], -50.0, 50.0)
    b = make(seed + 1, shapes[1], dtypes[1], -50.0, 50.0)
    s = scalar
    cases = [
        ("aten::__and__.Tensor", lambda x, y: x & y),
        ("aten::__or__.Tensor", lambda x, y: x | y),
        ("aten::__xor__.Tensor", lambda x, y: x ^ y),
        ("aten::__and__.Scalar", lambda x, y: x & s),
        ("aten::__or__.Scalar", lambda x, y: x | s),
        ("aten::__xor__.Scalar", lambda x, y: x ^ s),
        ("aten::bitwise_not.default", lambda x, y: ~x),
        ("aten::bitwise_not_.default", lambda x, y: fresh(x).bitwise_not_()),
    ]
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        cases += [(f"aten::{name}.Tensor", getattr(torch, name))]
        cases += [(f"aten::{name}.Scalar", lambda x, y, n=name: getattr(aten, n).Scalar(x, s))]
        cases += [(f"aten::{name}_.Tensor", _inplace(name))]
        cases += [
            (
                f"aten::{name}_.Scalar",
                lambda x, y, n=name: getattr(aten, n + "_").Scalar(fresh(x), s),
            )
        ]
    check_ops(cases, [a, b])


# -- where, clamp, lerp, addcmul, addcdiv -------------------------------------------------------


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)),
    scalars=st.tuples(scalars, scalars),
    seed=seeds,
)
def test_where(shapes, dtypes, scalars, seed):
    a = make(seed, shapes[0], dtypes[0])
    b = make(seed + 1, shapes[1], dtypes[1])
    cond = make(seed + 2, shapes[1][1:], torch.bool)
    s, r = scalars
    cases = [
        ("aten::where.self", lambda x, y, c: torch.where(c, x, y)),
        ("aten::where.ScalarSelf", lambda x, y, c: torch.where(c, s, y)),
        ("aten::where.ScalarOther", lambda x, y, c: torch.where(c, x, r)),
        ("aten::where.Scalar", lambda x, y, c: torch.where(c, s, r)),
    ]
    check_ops(cases, [a, b, cond], **tol(*dtypes))


@given(
    shape=shapes,
    dtype=st.sampled_from(NUMBERS),
    bounds=st.sampled_from(
        [(-1, 2), (0.5, 2.5), (None, 1.5), (-1.5, None), (2, -1), (math.nan, 1)]
    ),
    seed=seeds,
)
def test_clamp_scalars(shape, dtype, bounds, seed):
    """Scalar bounds (a float bound promotes an int tensor), min > max, a nan bound."""
    x = with_specials(make(seed, shape, dtype), seed)
    lo, hi = bounds
    cases = [
        ("aten::clamp.default", lambda t: torch.clamp(t, lo, hi)),
        ("aten::clamp_.default", lambda t: fresh(t).clamp_(lo, hi)),
    ]
    if lo is not None:
        cases += [("aten::clamp_min.default", lambda t: torch.clamp_min(t, lo))]
        cases += [("aten::clamp_min_.default", lambda t: torch.clamp_min_(fresh(t), lo))]
    if hi is not None:
        cases += [("aten::clamp_max.default", lambda t: torch.clamp_max(t, hi))]
        cases += [("aten::clamp_max_.default", lambda t: torch.clamp_max_(fresh(t), hi))]
    check_ops(cases, [x], **tol(dtype))


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from(NUMBERS), st.sampled_from(NUMBERS)),
    seed=seeds,
)
def test_clamp_tensors(shapes, dtypes, seed):
    x = with_specials(make(seed, shapes[0], dtypes[0]), seed)
    lo = make(seed + 1, shapes[1], dtypes[1], -3.0, 1.0)
    hi = make(seed + 2, shapes[1][1:], dtypes[1], -1.0, 3.0)
    cases = [
        ("aten::clamp.Tensor", lambda t, a, b: torch.clamp(t, a, b)),
        ("aten::clamp.Tensor", lambda t, a, b: torch.clamp(t, min=a)),
        ("aten::clamp.Tensor", lambda t, a, b: torch.clamp(t, max=b)),
        ("aten::clamp_.Tensor", lambda t, a, b: fresh(t).clamp_(a, b)),
        ("aten::clamp_min.Tensor", lambda t, a, b: torch.clamp_min(t, a)),
        ("aten::clamp_min_.Tensor", lambda t, a, b: torch.clamp_min_(fresh(t), a)),
        ("aten::clamp_max.Tensor", lambda t, a, b: torch.clamp_max(t, b)),
        ("aten::clamp_max_.Tensor", lambda t, a, b: torch.clamp_max_(fresh(t), b)),
    ]
    check_ops(cases, [x, lo, hi], **tol(*dtypes))


@given(
    shapes=shape_pairs(),
    dtype=st.sampled_from(FLOATS),
    weight=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, -0.3, 1.7]),
    value=st.sampled_from([1, 0.5, -2.0]),
    seed=seeds,
)
def test_lerp_addcmul_addcdiv(shapes, dtype, weight, value, seed):
    a = make(seed, shapes[0], dtype)
    b = make(seed + 1, shapes[1], dtype)
    w = make(seed + 2, shapes[1], dtype, -0.5, 1.5)
    cases = [
        ("aten::lerp.Scalar", lambda x, y, z: torch.lerp(x, y, weight)),
        ("aten::lerp.Tensor", lambda x, y, z: torch.lerp(x, y, z)),
        ("aten::lerp_.Scalar", lambda x, y, z: fresh(x).lerp_(y, weight)),
        ("aten::lerp_.Tensor", lambda x, y, z: fresh(x).lerp_(y, z)),
        ("aten::addcmul.default", lambda x, y, z: torch.addcmul(x, y, z, value=value)),
        ("aten::addcmul_.default", lambda x, y, z: fresh(x).addcmul_(y, z, value=value)),
        ("aten::addcdiv.default", lambda x, y, z: torch.addcdiv(x, y, z, value=value)),
        ("aten::addcdiv_.default", lambda x, y, z: fresh(x).addcdiv_(y, z, value=value)),
    ]
    check_ops(cases, [a, b, w], **tol(dtype))


@given(
    shapes=shape_pairs(), dtype=st.sampled_from(INTS), value=st.sampled_from([1, 3, -2]), seed=seeds
)
def test_addcmul_integers(shapes, dtype, value, seed):
    a, b = make(seed, shapes[0], dtype), make(seed + 1, shapes[1], dtype)
    cases = [("aten::addcmul.default", lambda x, y: torch.addcmul(x, y, x, value=value))]
    check_ops(cases, [a, b])


# -- dtype conversions and copy -----------------------------------------------------------------


@given(
    shape=shapes,
    dtypes=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)),
    seed=seeds,
)
def test_conversions(shape, dtypes, seed):
    """Casts (float to int truncates), bool conversions, and no-ops when nothing changes."""
    source, target = dtypes
    x = make(seed, shape, source, -100.0, 100.0)
    if x.is_floating_point():
        x = with_specials(x, seed) if target.is_floating_point else x
    like = torch.zeros((), dtype=target)
    cases = [
        ("aten::_to_copy.default", lambda t, o: aten._to_copy.default(t, dtype=target)),
        ("aten::_to_copy.default", lambda t, o: aten._to_copy.default(t)),
        ("aten::to.dtype", lambda t, o: t.to(target)),
        ("aten::to.dtype", lambda t, o: t.to(source)),
        ("aten::to.dtype_layout", lambda t, o: t.to(device="cpu")),
        ("aten::to.dtype_layout", lambda t, o: aten.to.dtype_layout(t, dtype=target)),
        ("aten::to.device", lambda t, o: aten.to.device(t, torch.device("cpu"), target)),
        ("aten::to.other", lambda t, o: aten.to.other(t, o)),
        ("aten::type_as.default", lambda t, o: t.type_as(o)),
    ]
    check_ops(cases, [x, like])


@given(
    shapes=shape_pairs(),
    dtypes=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)),
    seed=seeds,
)
def test_copy(shapes, dtypes, seed):
    """src is broadcast to self's shape and cast to self's dtype."""
    big, small = sorted(shapes, key=len, reverse=True)
    full = torch.broadcast_shapes(big, small)
    dst = make(seed, full, dtypes[0])
    src = make(seed + 1, small, dtypes[1], -50.0, 50.0)
    cases = [
        ("aten::copy.default", lambda d, s: aten.copy.default(d, s)),
        ("aten::copy_.default", lambda d, s: fresh(d).copy_(s)),
    ]
    check_ops(cases, [dst, src])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_integer_pow_wraps_like_torch(dtype):
    """An exact integer power by squaring: large results wrap like torch's, never rounded."""
    x = torch.tensor([3, -3, 7, 2, 0, 1], dtype=dtype)
    check_op(lambda t: t**39, [x], expect_op="aten::pow.Tensor_Scalar")


@given(
    batch=st.integers(2, 4),
    other_batch=st.integers(2, 5),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.int64]),
    seed=seeds,
)
def test_dynamic_shapes(batch, other_batch, dtype, seed):
    """A dynamic leading dimension stays dynamic (copy broadcasts with Shape, not a constant)."""
    x, y = make(seed, (batch, 3), dtype), make(seed + 1, (3,), torch.float32)
    other = make(seed + 2, (other_batch, 3), dtype)

    class Model(torch.nn.Module):
        def forward(self, t, u):
            return fresh(t).copy_(u), torch.where(t > 0, t, u), torch.clamp(t * 2, -1, 1), t / 3

    keys = ["aten::copy_.default", "aten::where.self", "aten::clamp.default", "aten::div.Tensor"]
    check_model(
        Model(),
        (x, y),
        expect_ops=keys,
        dynamic_shapes={"t": {0: "batch"}, "u": None},
        other_inputs=[(other, y)],
        **tol(dtype),
    )


@given(shapes=shape_pairs(max_dims=2), scalar=st.sampled_from([0.1, 3, -2.5]), seed=seeds)
def test_bfloat16(shapes, scalar, seed):
    """bfloat16 (onnxruntime's CPU kernels lack it: the reference evaluator runs it)."""
    a = make(seed, shapes[0], torch.bfloat16)
    b = nonzero(make(seed + 1, shapes[1], torch.bfloat16))
    cases = [
        ("aten::add.Tensor", lambda x, y: torch.add(x, y, alpha=2)),
        ("aten::mul.Tensor", lambda x, y: x * scalar),
        ("aten::div.Tensor_mode", lambda x, y: torch.div(x, y, rounding_mode="floor")),
        ("aten::remainder.Tensor", lambda x, y: x % y),
        ("aten::lt.Scalar", lambda x, y: x < scalar),
        ("aten::atan2.default", torch.atan2),
        ("aten::where.self", lambda x, y: torch.where(x > y, x, y)),
        ("aten::clamp.default", lambda x, y: x.clamp(-1, 1)),
        ("aten::to.dtype", lambda x, y: x.float()),
    ]
    check_ops(cases, [a, b], runtime="reference", atol=2e-2, rtol=2e-2)
