"""Hypothesis tests of the unary converters: torch eager against onnxruntime.

Ops sharing an input domain run as one exported model (one output per op, functional and
in-place variants together), so each example exercises many converters for one export.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import check_model, check_op

F = torch.nn.functional

COVERS = {
    "aten::abs.default",
    "aten::abs_.default",
    "aten::neg.default",
    "aten::neg_.default",
    "aten::sign.default",
    "aten::sign_.default",
    "aten::sgn.default",
    "aten::sgn_.default",
    "aten::sqrt.default",
    "aten::sqrt_.default",
    "aten::rsqrt.default",
    "aten::rsqrt_.default",
    "aten::reciprocal.default",
    "aten::reciprocal_.default",
    "aten::exp.default",
    "aten::exp_.default",
    "aten::exp2.default",
    "aten::exp2_.default",
    "aten::expm1.default",
    "aten::expm1_.default",
    "aten::log.default",
    "aten::log_.default",
    "aten::log2.default",
    "aten::log2_.default",
    "aten::log10.default",
    "aten::log10_.default",
    "aten::log1p.default",
    "aten::log1p_.default",
    "aten::sin.default",
    "aten::sin_.default",
    "aten::cos.default",
    "aten::cos_.default",
    "aten::tan.default",
    "aten::tan_.default",
    "aten::asin.default",
    "aten::asin_.default",
    "aten::acos.default",
    "aten::acos_.default",
    "aten::atan.default",
    "aten::atan_.default",
    "aten::sinh.default",
    "aten::sinh_.default",
    "aten::cosh.default",
    "aten::cosh_.default",
    "aten::tanh.default",
    "aten::tanh_.default",
    "aten::asinh.default",
    "aten::asinh_.default",
    "aten::acosh.default",
    "aten::acosh_.default",
    "aten::atanh.default",
    "aten::atanh_.default",
    "aten::erf.default",
    "aten::erf_.default",
    "aten::ceil.default",
    "aten::ceil_.default",
    "aten::floor.default",
    "aten::floor_.default",
    "aten::round.default",
    "aten::round_.default",
    "aten::round.decimals",
    "aten::round_.decimals",
    "aten::trunc.default",
    "aten::trunc_.default",
    "aten::frac.default",
    "aten::frac_.default",
    "aten::isnan.default",
    "aten::isinf.default",
    "aten::isfinite.default",
    "aten::nan_to_num.default",
    "aten::nan_to_num_.default",
    "aten::sigmoid.default",
    "aten::sigmoid_.default",
    "aten::square.default",
    "aten::square_.default",
    "aten::relu.default",
    "aten::relu_.default",
    "aten::relu6.default",
    "aten::relu6_.default",
    "aten::hardtanh.default",
    "aten::hardtanh_.default",
    "aten::threshold.default",
    "aten::threshold_.default",
    "aten::leaky_relu.default",
    "aten::leaky_relu_.default",
    "aten::elu.default",
    "aten::elu_.default",
    "aten::celu.default",
    "aten::celu_.default",
    "aten::selu.default",
    "aten::selu_.default",
    "aten::gelu.default",
    "aten::gelu_.default",
    "aten::silu.default",
    "aten::silu_.default",
    "aten::mish.default",
    "aten::mish_.default",
    "aten::softplus.default",
    "aten::hardsigmoid.default",
    "aten::hardsigmoid_.default",
    "aten::hardswish.default",
    "aten::hardswish_.default",
    "aten::logit.default",
    "aten::logit_.default",
    "aten::log_sigmoid.default",
    "aten::log_sigmoid_forward.default",
    "aten::prelu.default",
    "aten::_prelu_kernel.default",
    "aten::glu.default",
    "aten::heaviside.default",
    "aten::heaviside_.default",
}

FLOATS = [torch.float32, torch.float64, torch.float16]
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


def torch_accepts(fn, x: torch.Tensor) -> bool:
    """False for the ops torch itself rejects for this dtype (frac of an int64 tensor)."""
    try:
        fn(x)
    except (RuntimeError, NotImplementedError):
        return False
    return True


def _method(name: str):
    return lambda t: getattr(t, name)()


# (functional, in-place method or None, key, in-place key or None), grouped by input domain.
def _ops(*names: str) -> list:
    out = []
    for name in names:
        fn = getattr(torch, name, None) or getattr(torch.special, name)
        out.append((fn, _method(name + "_"), f"aten::{name}.default", f"aten::{name}_.default"))
    return out


GROUPS = {
    # any real input (ops whose double kernels onnxruntime has)
    "real": _ops("exp", "sin", "cos", "tanh", "sigmoid", "abs", "neg", "square"),
    "real_formulas": _ops("expm1", "exp2", "rsqrt", "frac", "trunc")
    + [(F.silu, lambda t: F.silu(t, inplace=True), "aten::silu.default", "aten::silu_.default")]
    + [(F.mish, lambda t: F.mish(t, inplace=True), "aten::mish.default", "aten::mish_.default")],
    "rounding": _ops("ceil", "floor", "round", "sign", "sgn"),
    # onnxruntime lacks double kernels for these: the reference evaluator runs double
    "real_no_double": _ops("tan", "atan", "sinh", "cosh", "asinh", "erf"),
    "positive": _ops("sqrt", "reciprocal", "log", "log2", "log10", "log1p"),
    "unit": _ops("asin", "acos", "atanh"),
    "at_least_one": _ops("acosh"),
    "activations": [
        (F.relu, lambda t: F.relu(t, inplace=True), "aten::relu.default", "aten::relu_.default"),
        (
            F.relu6,
            lambda t: F.relu6(t, inplace=True),
            "aten::relu6.default",
            "aten::relu6_.default",
        ),
        (F.selu, lambda t: F.selu(t, inplace=True), "aten::selu.default", "aten::selu_.default"),
        (
            F.hardsigmoid,
            lambda t: F.hardsigmoid(t, inplace=True),
            "aten::hardsigmoid.default",
            "aten::hardsigmoid_.default",
        ),
        (
            F.hardswish,
            lambda t: F.hardswish(t, inplace=True),
            "aten::hardswish.default",
            "aten::hardswish_.default",
        ),
        (F.logsigmoid, None, "aten::log_sigmoid.default", None),
        (
            lambda t: torch.ops.aten.log_sigmoid_forward.default(t),
            None,
            "aten::log_sigmoid_forward.default",
            None,
        ),
    ],
}
DOMAINS = {
    "positive": (0.01, 6.0),
    "unit": (-0.99, 0.99),
    "at_least_one": (1.0, 6.0),
}
NO_DOUBLE = {"real_no_double", "unit", "at_least_one"}


@pytest.mark.parametrize("group", sorted(GROUPS))
@given(shape=shapes, dtype=st.sampled_from([*FLOATS, torch.int64]), seed=seeds)
def test_unary_functions(group, shape, dtype, seed):
    """Every op of a group, functional and in place, on one input of the op's domain."""
    low, high = DOMAINS.get(group, (-3.0, 3.0))
    x = make(seed, shape, dtype, low, high)
    ops = [op for op in GROUPS[group] if torch_accepts(op[0], x)]

    def model(t):
        base = t if t.is_floating_point() else t.to(torch.float32)
        results = [fn(t) for fn, *_ in ops]
        results += [inplace(base * 1) for _, inplace, _, key in ops if inplace is not None]
        return tuple(results)

    keys = [k for _, _, k, _ in ops] + [k for _, i, _, k in ops if i is not None]
    if dtype == torch.float64 and group in NO_DOUBLE:
        # the reference evaluator's Erf is accurate to float32 only
        check_op(model, [x], expect_op=keys, runtime="reference", atol=1e-6, rtol=1e-6)
    else:
        check_op(model, [x], expect_op=keys, **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from(FLOATS), seed=seeds)
def test_classification_with_specials(shape, dtype, seed):
    """isnan/isinf/isfinite/nan_to_num and the rounding ops on nan, inf and signed zeros."""
    x = with_specials(make(seed, shape, dtype), seed)

    def model(t):
        return (
            torch.isnan(t),
            torch.isinf(t),
            torch.isfinite(t),
            torch.nan_to_num(t),
            torch.nan_to_num(t, nan=1.5, posinf=2.0, neginf=-2.0),
            (t * 1).nan_to_num_(),
            torch.sign(t),
            torch.floor(t),
            torch.round(t),
            torch.trunc(t),
            torch.sigmoid(t),
        )

    keys = [
        "aten::isnan.default",
        "aten::isinf.default",
        "aten::isfinite.default",
        "aten::nan_to_num.default",
        "aten::nan_to_num_.default",
        "aten::sign.default",
    ]
    check_op(model, [x], expect_op=keys, **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from([torch.int64, torch.int32, torch.bool]), seed=seeds)
def test_integer_inputs(shape, dtype, seed):
    """Integer and bool inputs: classification is constant, rounding is the identity."""
    x = make(seed, shape, dtype)

    def model(t):
        results = [
            torch.isnan(t),
            torch.isinf(t),
            torch.isfinite(t),
            torch.sign(t),
            torch.square(t),
        ]
        if t.dtype != torch.bool:
            results += [torch.abs(t), torch.neg(t), torch.ceil(t), torch.floor(t), torch.round(t)]
            results += [torch.trunc(t), torch.relu(t), torch.nan_to_num(t)]
        results += [torch.sqrt(t), torch.exp(t), torch.sigmoid(t)]
        return tuple(results)

    keys = [
        "aten::isnan.default",
        "aten::isinf.default",
        "aten::isfinite.default",
        "aten::sign.default",
    ]
    check_op(model, [x], expect_op=keys)


@given(
    shape=shapes,
    dtype=st.sampled_from(FLOATS),
    decimals=st.integers(-2, 3),
    seed=seeds,
)
def test_round_decimals(shape, dtype, decimals, seed):
    x = make(seed, shape, dtype, -300.0, 300.0)
    keys = ["aten::round.decimals", "aten::round_.decimals"]
    check_op(
        lambda t: (torch.round(t, decimals=decimals), (t * 1).round_(decimals=decimals)),
        [x],
        expect_op=keys,
        **tol(dtype),
    )


@given(
    shape=shapes,
    dtype=st.sampled_from(FLOATS),
    approximate=st.sampled_from(["none", "tanh"]),
    opset=st.sampled_from([18, 19, 20, 23]),
    seed=seeds,
)
def test_gelu(shape, dtype, approximate, opset, seed):
    """The decomposition before opset 20, the Gelu op from 20."""
    x = make(seed, shape, dtype, -5.0, 5.0)
    # onnxruntime has no double Erf or Gelu: the reference evaluator runs double
    runtime = "reference" if dtype == torch.float64 else "onnxruntime"
    check_op(
        lambda t: (
            F.gelu(t, approximate=approximate),
            torch.ops.aten.gelu_(t * 1, approximate=approximate),
        ),
        [x],
        expect_op=["aten::gelu.default", "aten::gelu_.default"],
        target_opset=opset,
        runtime=runtime,
        **(tol(dtype) if dtype != torch.float64 else {"atol": 1e-6, "rtol": 1e-6}),
    )


@given(
    shape=shapes,
    dtype=st.sampled_from(FLOATS),
    alpha=st.sampled_from([1.0, 0.5, 2.0]),
    scale=st.sampled_from([1.0, 1.5]),
    input_scale=st.sampled_from([1.0, 0.7]),
    slope=st.sampled_from([0.01, 0.2, -0.5]),
    seed=seeds,
)
def test_parametrized_activations(shape, dtype, alpha, scale, input_scale, slope, seed):
    x = with_specials(make(seed, shape, dtype, -4.0, 4.0), seed)
    elu = torch.ops.aten.elu

    def model(t):
        return (
            elu.default(t, alpha, scale, input_scale),
            elu_(t * 1),
            F.celu(t, alpha=alpha),
            F.celu(t * 1, alpha=alpha, inplace=True),
            F.leaky_relu(t, slope),
            F.leaky_relu(t * 1, slope, inplace=True),
        )

    def elu_(t):
        return torch.ops.aten.elu_.default(t, alpha, scale, input_scale)

    keys = [
        "aten::elu.default",
        "aten::elu_.default",
        "aten::celu.default",
        "aten::celu_.default",
        "aten::leaky_relu.default",
        "aten::leaky_relu_.default",
    ]
    check_op(model, [x], expect_op=keys, **tol(dtype))


@given(
    shape=shapes,
    dtype=st.sampled_from(FLOATS),
    bounds=st.sampled_from([(-1.0, 1.0), (-0.5, 2.0), (0.0, 6.0), (1.0, 1.0)]),
    threshold=st.sampled_from([(0.1, 20.0), (-1.0, -2.0), (0.0, 0.0)]),
    softplus=st.sampled_from([(1.0, 20.0), (2.0, 1.0), (0.5, 3.0)]),
    seed=seeds,
)
def test_thresholds(shape, dtype, bounds, threshold, softplus, seed):
    x = make(seed, shape, dtype, -8.0, 8.0)

    def model(t):
        return (
            F.hardtanh(t, *bounds),
            F.hardtanh(t * 1, *bounds, inplace=True),
            F.threshold(t, *threshold),
            F.threshold(t * 1, *threshold, inplace=True),
            F.softplus(t, *softplus),
        )

    keys = [
        "aten::hardtanh.default",
        "aten::hardtanh_.default",
        "aten::threshold.default",
        "aten::threshold_.default",
        "aten::softplus.default",
    ]
    check_op(model, [x], expect_op=keys, **tol(dtype))


@given(
    shape=shapes,
    dtype=st.sampled_from(FLOATS),
    eps=st.sampled_from([None, 1e-6, 0.1]),
    seed=seeds,
)
def test_logit(shape, dtype, eps, seed):
    x = make(seed, shape, dtype, 0.0, 1.0)
    check_op(
        lambda t: (torch.logit(t, eps), (t * 1).logit_(eps)),
        [x],
        expect_op=["aten::logit.default", "aten::logit_.default"],
        **tol(dtype),
    )


@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple),
    dtype=st.sampled_from(FLOATS),
    per_channel=st.booleans(),
    seed=seeds,
)
def test_prelu(shape, dtype, per_channel, seed):
    channels = shape[1] if per_channel and len(shape) >= 2 else 1
    x = make(seed, shape, dtype)
    w = make(seed + 7, (channels,), dtype, -1.0, 1.0)
    keys = ["aten::prelu.default"]
    check_op(F.prelu, [x, w], expect_op=keys, **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from(FLOATS), seed=seeds)
def test_prelu_kernel(shape, dtype, seed):
    x = make(seed, shape, dtype)
    w = make(seed + 7, shape[-1:] if shape else (), dtype, -1.0, 1.0)
    check_op(
        torch.ops.aten._prelu_kernel.default,
        [x, w],
        expect_op="aten::_prelu_kernel.default",
        **tol(dtype),
    )


@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple),
    dtype=st.sampled_from(FLOATS),
    data=st.data(),
    seed=seeds,
)
def test_glu(shape, dtype, data, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape = tuple(2 * d if i == dim % len(shape) else d for i, d in enumerate(shape))
    x = make(seed, shape, dtype)
    check_op(lambda t: F.glu(t, dim), [x], expect_op="aten::glu.default", **tol(dtype))


@given(shape=shapes, dtype=st.sampled_from([*FLOATS, torch.int64]), seed=seeds)
def test_heaviside(shape, dtype, seed):
    x = make(seed, shape, dtype, -2.0, 2.0).round()
    values = make(seed + 3, shape[1:], dtype)
    check_op(
        lambda t, v: (torch.heaviside(t, v), (t * 1).heaviside_(v)),
        [x, values],
        expect_op=["aten::heaviside.default", "aten::heaviside_.default"],
        **tol(dtype),
    )


@given(
    batch=st.integers(2, 4),
    other_batch=st.integers(2, 5),
    dtype=st.sampled_from([torch.float32, torch.float16]),
    seed=seeds,
)
def test_dynamic_shapes(batch, other_batch, dtype, seed):
    """A dynamic leading dimension stays dynamic through prelu's reshape and glu's split."""
    x, w = make(seed, (batch, 3, 4), dtype), make(seed + 1, (3,), dtype)
    other = make(seed + 2, (other_batch, 3, 4), dtype)

    class Model(torch.nn.Module):
        def forward(self, t, v):
            return F.prelu(t, v), F.glu(t, -1), torch.log1p(t.abs())

    check_model(
        Model(),
        (x, w),
        expect_ops=["aten::prelu.default", "aten::glu.default", "aten::log1p.default"],
        dynamic_shapes={"t": {0: "batch"}, "v": None},
        other_inputs=[(other, w)],
        **tol(dtype),
    )


@given(shape=shapes, opset=st.sampled_from([18, 22]), seed=seeds)
def test_bfloat16(shape, opset, seed):
    """bfloat16 (the reference evaluator runs it); Sin and Round take it from opset 22 only."""
    x = make(seed, shape, torch.bfloat16, -0.9, 0.9)

    def model(t):
        return (
            torch.sin(t),
            torch.atanh(t),
            torch.round(t * 4),
            torch.exp(t),
            torch.isinf(t),
            torch.expm1(t),
            F.gelu(t),
            F.silu(t),
        )

    keys = [
        "aten::sin.default",
        "aten::atanh.default",
        "aten::round.default",
        "aten::isinf.default",
    ]
    check_op(
        model, [x], expect_op=keys, target_opset=opset, runtime="reference", atol=2e-2, rtol=2e-2
    )


@given(
    shape=shapes,
    seed=seeds,
    near=st.sampled_from([-3.0, 3.0, 0.0]),
    spread=st.sampled_from([1e-6, 1e-3, 4.0]),
)
def test_hardswish_hardsigmoid_are_single_ops_in_float32(shape, seed, near, spread):
    """float32 hardswish/hardsigmoid are ONNX HardSwish/HardSigmoid (onnxruntime runs them
    inside the convolution before): within float32 rounding of torch, the kinks included."""
    x = make(seed, shape, torch.float32, near - spread, near + spread)

    def model(t):
        return F.hardswish(t), F.hardsigmoid(t)

    keys = ["aten::hardswish.default", "aten::hardsigmoid.default"]
    onx = check_op(model, [x], expect_op=keys, atol=1e-6, rtol=1e-6)
    ops = [n.op_type for n in onx.graph.node]
    assert ops.count("HardSwish") == 1 and ops.count("HardSigmoid") == 1, ops
    assert "Clip" not in ops, ops
