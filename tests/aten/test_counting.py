"""Hypothesis tests of histc, bincount, searchsorted and unique against torch eager."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_op

COVERS = {
    "aten::histc.default",
    "aten::bincount.default",
    "aten::searchsorted.Tensor",
    "aten::searchsorted.Scalar",
    "aten::_unique2.default",
    "aten::bucketize.Tensor",
    "aten::bucketize.Scalar",
}


def _gen(seed):
    return torch.Generator().manual_seed(seed)


@given(
    bins=st.integers(1, 9),
    n=st.integers(0, 40),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 1000),
)
def test_histc_integer_valued_as_moe_routing(bins, n, dtype, seed):
    """transformers' MoE: histc(experts.float(), bins=E, min=0, max=E-1) must be exact."""
    experts = torch.randint(0, bins, (n, 2), generator=_gen(seed)).to(dtype)
    check_op(lambda x: torch.histc(x, bins=bins, min=0, max=bins - 1), [experts], expect_op="aten::histc.default")


@given(
    bins=st.integers(1, 12),
    low=st.floats(-10, 10),
    width=st.floats(0.01, 20),
    seed=st.integers(0, 1000),
)
def test_histc_float_values_and_range(bins, low, width, seed):
    x = torch.rand(3, 17, generator=_gen(seed)) * (width * 1.4) + (low - width * 0.2)
    x[0, 0], x[0, 1], x[0, 2] = low, low + width, float("nan")
    check_op(lambda t: torch.histc(t, bins=bins, min=low, max=low + width), [x], expect_op="aten::histc.default")


@given(bins=st.integers(1, 6), n=st.integers(0, 9), spread=st.sampled_from([0.0, 1.0, 7.5]), seed=st.integers(0, 1000))
def test_histc_range_from_the_data(bins, n, spread, seed):
    """min == max: torch takes the data's min and max (widened by 1 when they are equal)."""
    x = torch.rand(n, generator=_gen(seed)) * spread + 3.0
    check_op(lambda t: torch.histc(t, bins=bins), [x], expect_op="aten::histc.default")
    check_op(lambda t: torch.histc(t, bins=bins, min=2, max=2), [x], expect_op="aten::histc.default")


def test_histc_of_float16_is_refused():
    with pytest.raises(tonnx.UnsupportedError, match="float16"):
        check_op(lambda t: torch.histc(t, bins=4, min=0, max=1), [torch.rand(5).half()], expect_op="aten::histc.default")


@given(n=st.integers(0, 30), high=st.integers(1, 10), minlength=st.integers(0, 12), seed=st.integers(0, 1000))
def test_bincount(n, high, minlength, seed):
    x = torch.randint(0, high, (n,), generator=_gen(seed))
    w = torch.rand(n, generator=_gen(seed + 1))
    check_op(lambda t: torch.bincount(t, minlength=minlength), [x], expect_op="aten::bincount.default")
    if n:  # eager gives int64 for an empty input even with weights, its meta function not
        check_op(lambda t, u: torch.bincount(t, u, minlength), [x, w], expect_op="aten::bincount.default")


@given(
    right=st.booleans(),
    out_int32=st.booleans(),
    batched=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.int64]),
    seed=st.integers(0, 1000),
)
def test_searchsorted(right, out_int32, batched, dtype, seed):
    shape = (3, 6) if batched else (6,)
    seq = torch.randint(-5, 5, shape, generator=_gen(seed)).to(dtype).sort(-1).values
    values = torch.randint(-7, 7, (3, 4) if batched else (2, 5), generator=_gen(seed + 1)).to(dtype)
    check_op(
        lambda s, v: torch.searchsorted(s, v, right=right, out_int32=out_int32),
        [seq, values],
        expect_op="aten::searchsorted.Tensor",
    )
    if not batched:
        check_op(lambda s: torch.searchsorted(s, 2, side="right" if right else "left"), [seq], expect_op="aten::searchsorted.Scalar")


def test_searchsorted_with_sorter_and_nan():
    seq = torch.tensor([3.0, 1.0, float("nan"), 2.0])
    sorter = torch.argsort(seq)
    values = torch.tensor([0.0, 1.0, 2.5, 5.0, float("nan")])
    check_op(lambda s, v, o: torch.searchsorted(s, v, sorter=o), [seq, values, sorter], expect_op="aten::searchsorted.Tensor")


@given(
    shape=st.sampled_from([(7,), (3, 4), (0,)]),
    dtype=st.sampled_from([torch.int64, torch.int32, torch.uint8, torch.bool]),
    seed=st.integers(0, 1000),
)
def test_unique(shape, dtype, seed):
    x = torch.randint(0, 5, shape, generator=_gen(seed)).to(dtype)
    check_op(lambda t: torch.unique(t), [x], expect_op="aten::_unique2.default")
    check_op(lambda t: torch.unique(t, sorted=False), [x], expect_op="aten::_unique2.default")
    check_op(
        lambda t: torch.unique(t, return_inverse=True, return_counts=True),
        [x],
        expect_op="aten::_unique2.default",
    )


@given(
    shape=st.sampled_from([(9,), (3, 4), (0,), (1,)]),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.float16, torch.bfloat16]),
    seed=st.integers(0, 1000),
)
def test_unique_of_floats(shape, dtype, seed):
    """Few distinct values with NaN (each its own entry, last, in input order), +-inf and
    +-0 (the first of them in the input is kept: 1 / value tells which)."""
    pool = torch.tensor([float("nan"), -0.0, 0.0, 1.5, -2.0, float("inf"), -float("inf")], dtype=dtype)
    x = pool[torch.randint(0, len(pool), shape, generator=_gen(seed))]
    check_op(lambda t: torch.unique(t), [x], expect_op="aten::_unique2.default", runtime="reference" if dtype == torch.bfloat16 else "onnxruntime")
    if dtype == torch.bfloat16:
        return
    check_op(lambda t: 1.0 / torch.unique(t, sorted=False), [x], expect_op="aten::_unique2.default")
    check_op(
        lambda t: torch.unique(t, return_inverse=True, return_counts=True),
        [x],
        expect_op="aten::_unique2.default",
    )


@given(right=st.booleans(), out_int32=st.booleans(), seed=st.integers(0, 1000))
def test_bucketize(right, out_int32, seed):
    boundaries = torch.randint(-5, 5, (7,), generator=_gen(seed)).float().sort().values
    x = torch.randint(-7, 7, (3, 4), generator=_gen(seed + 1)).float()
    check_op(
        lambda v, b: torch.bucketize(v, b, out_int32=out_int32, right=right),
        [x, boundaries],
        expect_op="aten::bucketize.Tensor",
    )
    check_op(lambda b: torch.bucketize(1.0, b, right=right), [boundaries], expect_op="aten::bucketize.Scalar")
