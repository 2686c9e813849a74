"""Hypothesis tests of median, cummax and cummin against torch eager (NaN, ties, dynamic)."""

from __future__ import annotations

import onnxruntime as ort
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, check_op, op_module

COVERS = {
    "aten::median.default",
    "aten::median.dim",
    "aten::cummax.default",
    "aten::cummin.default",
    "aten::logcumsumexp.default",
}


def _values(shape, dtype, seed, nan: bool):
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=gen).to(dtype)
        if nan and x.numel() > 2:
            x.view(-1)[torch.randint(0, x.numel(), (2,), generator=gen)] = float("nan")
        return x
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    return torch.randint(-50, 50, shape, generator=gen).to(dtype)


@given(
    shape=st.sampled_from([(7,), (3, 5), (2, 3, 4)]),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.int64, torch.int32]),
    nan=st.booleans(),
    keepdim=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_median(shape, dtype, nan, keepdim, seed):
    x = _values(shape, dtype, seed, nan)
    dim = seed % len(shape) - len(shape) * (seed % 2)
    check_op(torch.median, [x], expect_op="aten::median.default")
    # indices are compared only without ties (torch: "not necessarily the first occurrence")
    if dtype.is_floating_point:
        check_op(lambda t: torch.median(t, dim, keepdim), [x], expect_op="aten::median.dim")
    else:
        check_op(lambda t: torch.median(t, dim, keepdim).values, [x], expect_op="aten::median.dim")


@given(
    shape=st.sampled_from([(6,), (3, 5), (2, 3, 4)]),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.int64, torch.int32, torch.bool]),
    nan=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_cummax_cummin(shape, dtype, nan, seed):
    x = _values(shape, dtype, seed, nan)
    if not dtype.is_floating_point and dtype != torch.bool:
        x = x // 10  # ties: torch keeps the latest index
    dim = seed % len(shape)
    check_op(lambda t: torch.cummax(t, dim), [x], expect_op="aten::cummax.default")
    check_op(lambda t: torch.cummin(t, dim), [x], expect_op="aten::cummin.default")


def test_dynamic_length():
    x = torch.tensor([[1.0, 3.0, 3.0, float("nan"), 5.0, float("nan"), 0.0]])
    module = op_module(lambda t: (torch.cummax(t, 1), torch.median(t, 1)), 1)
    check_model(
        module,
        (x,),
        dynamic_shapes=({1: "n"},),
        other_inputs=[(torch.randn(1, 11),), (torch.randn(1, 1),)],
        expect_ops=["aten::cummax.default", "aten::median.dim"],
    )


@given(
    shape=st.sampled_from([(6,), (3, 5), (2, 3, 4)]),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    special=st.sampled_from([None, float("nan"), float("inf"), float("-inf")]),
    seed=st.integers(0, 1000),
)
def test_logcumsumexp(shape, dtype, special, seed):
    x = _values(shape, dtype, seed, False) * 20
    if special is not None:
        x.view(-1)[seed % x.numel()] = special
    dim = seed % len(shape)
    check_op(lambda t: torch.logcumsumexp(t, dim), [x], expect_op="aten::logcumsumexp.default")


def test_logcumsumexp_all_minus_inf():
    x = torch.full((2, 4), float("-inf"))
    check_op(lambda t: torch.logcumsumexp(t, 1), [x], expect_op="aten::logcumsumexp.default")


def test_zero_dim_inputs():
    x = torch.tensor(3.0)
    check_op(lambda t: torch.median(t, 0), [x], expect_op="aten::median.dim")
    check_op(lambda t: torch.median(t, 0, True), [x], expect_op="aten::median.dim")
    check_op(lambda t: torch.cummax(t, 0), [x], expect_op="aten::cummax.default")
    check_op(lambda t: torch.logcumsumexp(t, 0), [x], expect_op="aten::logcumsumexp.default")


@pytest.mark.parametrize("name", ["cummax", "cummin", "logcumsumexp"])
@pytest.mark.parametrize("shape, dim", [((3, 0), 1), ((0, 4), 1), ((0, 4), 0), ((2, 0, 3), -1), ((0,), 0)])
def test_running_ops_of_empty_inputs_have_torch_shapes(name, shape, dim):
    """The running ops reduce a (..., n, n) window over its last axis; onnxruntime 1.31.1
    reduces an empty tensor over a negative axis to the wrong shape (the graph failed in a
    Squeeze of (3, 0, 0)), so the axis is counted from the front (issue 31)."""
    fn = {
        "cummax": lambda t: tuple(torch.cummax(t, dim)),
        "cummin": lambda t: tuple(torch.cummin(t, dim)),
        "logcumsumexp": lambda t: torch.logcumsumexp(t, dim),
    }[name]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    onx = tonnx.to_onnx(op_module(fn, 1), (x,))
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    want = fn(x)
    want = list(want) if isinstance(want, tuple) else [want]
    assert [g.shape for g in got] == [tuple(w.shape) for w in want]
