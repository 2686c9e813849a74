"""Hypothesis tests of the layout prims: torch eager against onnxruntime, static and
dynamic shapes."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx import UnsupportedError
from tonnx.testing import check_op

from .test_elementwise import make, seeds

P = torch.ops.prims

COVERS = {
    "prims::broadcast_in_dim.default",
    "prims::collapse_view.default",
    "prims::collapse.default",
    "prims::split_dim.default",
    "prims::squeeze.default",
    "prims::transpose.default",
    "prims::reshape.default",
    "prims::view_of.default",
    "prims::clone.default",
    "prims::cat.default",
    "prims::rev.default",
    "prims::as_strided.default",
}

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)
dtypes = st.sampled_from([torch.float32, torch.int64, torch.bool, torch.float16])


@given(shape=shapes, data=st.data(), dtype=dtypes, seed=seeds)
def test_broadcast_in_dim(shape, data, dtype, seed):
    """New dims anywhere; size-1 input dims expanded."""
    extra = data.draw(st.lists(st.integers(1, 3), max_size=2))
    out_rank = len(shape) + len(extra)
    kept = sorted(data.draw(st.permutations(range(out_rank)))[: len(shape)])
    target = [0] * out_rank
    for d, size in zip(kept, shape):
        target[d] = size if size != 1 else data.draw(st.integers(1, 3))
    it = iter(extra)
    target = [t if i in kept else next(it) for i, t in enumerate(target)]
    x = make(seed, shape, dtype)
    check_op(
        lambda t: P.broadcast_in_dim(t, target, kept), [x], expect_op="prims::broadcast_in_dim.default"
    )


@given(shape=shapes, data=st.data(), dtype=dtypes, seed=seeds)
def test_collapse_split_squeeze_transpose(shape, data, dtype, seed):
    rank = len(shape)
    start = data.draw(st.integers(0, rank - 1))
    end = data.draw(st.integers(start, rank - 1))  # included
    perm = data.draw(st.permutations(range(rank)))
    dim = data.draw(st.integers(0, rank - 1))
    outer = data.draw(st.sampled_from([d for d in range(1, shape[dim] + 1) if shape[dim] % d == 0]))
    ones = [i for i, s in enumerate(shape) if s == 1]
    x = make(seed, shape, dtype)

    def model(t):
        return (
            P.collapse_view(t, start, end),
            P.collapse(P.transpose(t, perm), start, end),
            P.split_dim(t, dim, outer),
            P.squeeze(t, ones),
            P.transpose(t, perm),
            P.view_of(t),
            P.clone(t),
        )

    keys = [f"prims::{n}.default" for n in ("collapse_view", "collapse", "split_dim", "squeeze", "transpose", "view_of", "clone")]
    check_op(model, [x], expect_op=keys)


@given(shape=shapes, data=st.data(), dtype=dtypes, seed=seeds)
def test_reshape_cat_rev(shape, data, dtype, seed):
    numel = math.prod(shape)
    target = data.draw(st.permutations([*shape, 1]))
    dim = data.draw(st.integers(0, len(shape) - 1))
    other = list(shape)
    other[dim] = data.draw(st.integers(1, 3))
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True))
    x, y = make(seed, shape, dtype), make(seed + 1, tuple(other), dtype)
    assert math.prod(target) == numel

    def model(a, b):
        return P.reshape(a, list(target)), P.cat([a, b, a], dim), P.rev(a, dims)

    keys = ["prims::reshape.default", "prims::cat.default", "prims::rev.default"]
    check_op(model, [x, y], expect_op=keys)


@given(batch=st.integers(2, 4), other=st.integers(2, 5), seed=seeds)
def test_dynamic_shapes(batch, other, seed):
    """Symbolic sizes stay symbolic through broadcast, collapse, split and reshape."""
    x = make(seed, (batch, 6, 2), torch.float32)
    y = make(seed + 1, (other, 6, 2), torch.float32)

    def model(t):
        n = t.shape[0]
        wide = P.broadcast_in_dim(t, [n, 3, 6, 2], [0, 2, 3])
        flat = P.collapse_view(t, 0, 2)
        split = P.split_dim(flat, 0, n)
        return wide, flat, P.split_dim(t, 1, 3), P.reshape(split, [n, 3, 4]), P.collapse(wide, 1, 3)

    check_op(
        model,
        [x],
        expect_op=["prims::broadcast_in_dim.default", "prims::split_dim.default", "prims::reshape.default"],
        dynamic_shapes=({0: "batch"},),
        other_inputs=[(y,)],
    )


@given(shape=st.lists(st.integers(2, 5), min_size=2, max_size=3).map(tuple), data=st.data(), seed=seeds)
def test_as_strided(shape, data, seed):
    """Windows of a contiguous or permuted input (what torch's _refs make of views)."""
    numel = math.prod(shape)
    size = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    stride = data.draw(st.lists(st.integers(0, 3), min_size=len(size), max_size=len(size)))
    reach = sum((n - 1) * s for n, s in zip(size, stride))
    offset = data.draw(st.integers(0, max(numel - 1 - reach, 0)))
    if offset + reach >= numel:
        return  # would read beyond the input
    perm = data.draw(st.permutations(range(len(shape))))
    x = make(seed, shape, torch.float32)

    def model(t):
        # a transposed view keeps the storage of t * 1: as_strided reads it in storage order
        return P.as_strided(P.transpose(t * 1, perm), size, stride, offset)

    check_op(model, [x], expect_op="prims::as_strided.default")


def test_as_strided_of_a_dynamic_input_refused():
    """The values read depend on sizes known at run time only: refused, not guessed."""
    with pytest.raises(Exception, match="as_strided") as info:
        check_op(
            lambda t: P.as_strided(t * 1, [2, 2], [1, 2], 0),
            [torch.rand(3, 2)],
            expect_op="prims::as_strided.default",
            dynamic_shapes=({0: "batch"},),
        )
    assert isinstance(info.value.__cause__, UnsupportedError)
