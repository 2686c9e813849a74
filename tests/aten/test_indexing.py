"""Hypothesis tests of the indexing converters: torch eager against onnxruntime.

In-place variants run on ``x * 1`` (a fresh intermediate, so the exported program keeps the
in-place op). Tensor inputs are never 0-d: 0-d values come from ``torch.scalar_tensor``.
Where torch leaves an order or a winner unspecified (duplicate indices in a plain scatter,
ties in an unstable sort), the tests draw data without that ambiguity.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, check_op

COVERS = {
    "aten::index.Tensor",
    "aten::_unsafe_index.Tensor",
    "aten::index_put.default",
    "aten::index_put_.default",
    "aten::_unsafe_index_put.default",
    "aten::index_select.default",
    "aten::gather.default",
    "aten::take.default",
    "aten::embedding.default",
    "aten::scatter.src",
    "aten::scatter_.src",
    "aten::scatter.value",
    "aten::scatter_.value",
    "aten::scatter.reduce",
    "aten::scatter_.reduce",
    "aten::scatter.value_reduce",
    "aten::scatter_.value_reduce",
    "aten::scatter_add.default",
    "aten::scatter_add_.default",
    "aten::scatter_reduce.two",
    "aten::scatter_reduce_.two",
    "aten::index_copy.default",
    "aten::index_copy_.default",
    "aten::index_add.default",
    "aten::index_add_.default",
    "aten::index_fill.int_Scalar",
    "aten::index_fill.int_Tensor",
    "aten::index_fill_.int_Scalar",
    "aten::index_fill_.int_Tensor",
    "aten::slice_scatter.default",
    "aten::select_scatter.default",
    "aten::masked_fill.Scalar",
    "aten::masked_fill.Tensor",
    "aten::masked_fill_.Scalar",
    "aten::masked_fill_.Tensor",
    "aten::masked_scatter.default",
    "aten::masked_scatter_.default",
    "aten::nonzero.default",
    "aten::topk.default",
    "aten::sort.default",
    "aten::sort.stable",
    "aten::argsort.default",
    "aten::argsort.stable",
}

FLOATS = [torch.float32, torch.float64, torch.float16]
NUMBERS = [*FLOATS, torch.int64, torch.int32]
ALL = [*NUMBERS, torch.bool]
dims = st.integers(1, 4)
seeds = st.integers(0, 2**16)


def make(seed: int, shape, dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=gen) * 8 - 4).to(dtype)
    return torch.randint(-9, 10, shape, generator=gen).to(dtype)


def integers(seed: int, shape, low: int, high: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, tuple(shape), generator=gen)


def distinct(seed: int, shape, dtype: torch.dtype) -> torch.Tensor:
    """Values without ties (exact in float16 too)."""
    gen = torch.Generator().manual_seed(seed)
    n = math.prod(shape)
    return (torch.randperm(n, generator=gen) - n // 2).reshape(shape).to(dtype)


def unique_positions(seed: int, shape, dim: int, count: int) -> torch.Tensor:
    """An index of ``shape`` with ``count`` along ``dim`` and no duplicate along ``dim``."""
    gen = torch.Generator().manual_seed(seed)
    order = torch.rand(shape, generator=gen).argsort(dim=dim)
    return order.narrow(dim, 0, count)


def tol(dtype: torch.dtype) -> dict:
    if dtype == torch.float16:
        return {"atol": 1e-2, "rtol": 1e-2}
    return {"atol": 1e-5, "rtol": 1e-5}


def fresh(x: torch.Tensor) -> torch.Tensor:
    """A new intermediate for in-place ops (``aten::mul.Tensor``, not a graph input)."""
    return x * 1


# -- index, index_put ------------------------------------------------------------------------


def _entries(kinds, tensors) -> list:
    it = iter(tensors)
    return [next(it) if k else None for k in kinds]


@st.composite
def advanced_indices(draw, *, min_rank: int = 1):
    """(shape, kinds, index tensors): broadcastable int index tensors, some dims skipped."""
    shape = draw(st.lists(dims, min_size=min_rank, max_size=4))
    n = draw(st.integers(1, len(shape)))
    kinds = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
    batch = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))
    seed = draw(seeds)
    tensors = []
    for i, (size, kind) in enumerate(zip(shape, kinds)):
        if not kind:
            continue
        ones = draw(st.lists(st.booleans(), min_size=len(batch), max_size=len(batch)))
        own = [1 if o else b for o, b in zip(ones, batch)][draw(st.integers(0, len(batch) - 1)) :]
        index = integers(seed + i, own, -size, size)
        tensors.append(index.to(draw(st.sampled_from([torch.int64, torch.int32]))))
    return shape, kinds, tensors


@pytest.mark.parametrize("key", ["aten::index.Tensor", "aten::_unsafe_index.Tensor"])
@given(case=advanced_indices(), dtype=st.sampled_from(ALL), seed=seeds)
def test_index(key, case, dtype, seed):
    shape, kinds, tensors = case
    if key == "aten::_unsafe_index.Tensor":

        def fn(x, *index):
            return torch.ops.aten._unsafe_index.Tensor(x, _entries(kinds, index))

    else:

        def fn(x, *index):
            return x[tuple(slice(None) if e is None else e for e in _entries(kinds, index))]

    check_op(fn, [make(seed, shape, dtype), *tensors], expect_op=key)


@given(
    shape=st.lists(dims, min_size=1, max_size=4),
    data=st.data(),
    dtype=st.sampled_from(ALL),
    seed=seeds,
)
def test_index_mask(shape, data, dtype, seed):
    start = data.draw(st.integers(0, len(shape) - 1))
    k = data.draw(st.integers(1, len(shape) - start))
    mask = make(seed + 1, shape[start : start + k], torch.bool)

    def fn(x, m):
        return x[(slice(None),) * start + (m,)]

    check_op(fn, [make(seed, shape, dtype), mask], expect_op="aten::index.Tensor")


@st.composite
def put_indices(draw, accumulate: bool):
    """(shape, kinds, index tensors) where the indexed positions are distinct unless accumulating."""
    shape = draw(st.lists(dims, min_size=1, max_size=3))
    n = draw(st.integers(1, len(shape)))
    kinds = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
    sizes = [s for s, k in zip(shape, kinds) if k]
    seed = draw(seeds)
    gen = torch.Generator().manual_seed(seed)
    total = math.prod(sizes)
    if accumulate:
        flat = torch.randint(0, total, (draw(st.integers(1, 2 * total)),), generator=gen)
    else:
        flat = torch.randperm(total, generator=gen)[: draw(st.integers(1, total))]
    tensors = []
    for size in reversed(sizes):
        tensors.insert(0, flat % size - size * integers(seed + size, flat.shape, 0, 2))
        flat = flat // size
    if draw(st.booleans()) and tensors[0].numel() % 2 == 0:
        tensors = [t.reshape(2, -1) for t in tensors]
    return shape, kinds, tensors


@pytest.mark.parametrize("variant", ["index_put", "index_put_", "_unsafe_index_put"])
@given(data=st.data(), seed=seeds)
def test_index_put(variant, data, seed):
    # x * 1 is not boolean: the in-place variant runs on numbers
    dtype = data.draw(st.sampled_from(NUMBERS if variant == "index_put_" else ALL))
    accumulate = dtype != torch.bool and data.draw(st.booleans())
    shape, kinds, tensors = data.draw(put_indices(accumulate))
    x = make(seed, shape, dtype)
    indexed = x[tuple(slice(None) if e is None else e for e in _entries(kinds, tensors))].shape
    values = make(seed + 1, indexed[data.draw(st.integers(0, len(indexed) - 1)) :], dtype)

    def fn(x, v, *index):
        entries = _entries(kinds, index)
        if variant == "index_put_":
            return torch.ops.aten.index_put_(fresh(x), entries, v, accumulate)
        return getattr(torch.ops.aten, variant)(x, entries, v, accumulate)

    check_op(fn, [x, values, *tensors], expect_op=f"aten::{variant}.default", **tol(dtype))


def test_index_put_mask_with_one_value():
    x, mask = make(0, (3, 4, 5), torch.float32), make(1, (3, 4), torch.bool)
    check_op(
        lambda x, m: torch.ops.aten.index_put(x, [m], torch.scalar_tensor(2.5)),
        [x, mask],
        expect_op="aten::index_put.default",
    )


# -- gather-like -----------------------------------------------------------------------------


@given(
    shape=st.lists(dims, min_size=1, max_size=4),
    data=st.data(),
    dtype=st.sampled_from(ALL),
    seed=seeds,
)
def test_gather(shape, data, dtype, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = [data.draw(st.integers(1, s)) for s in shape]
    index_shape[dim] = data.draw(st.integers(1, 5))
    index = integers(seed + 1, index_shape, 0, shape[dim])
    check_op(
        torch.gather,
        [make(seed, shape, dtype), index],
        constants={1: dim},
        expect_op="aten::gather.default",
    )


@given(
    shape=st.lists(dims, min_size=1, max_size=4),
    data=st.data(),
    dtype=st.sampled_from(ALL),
    seed=seeds,
)
def test_index_select(shape, data, dtype, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = integers(seed + 1, [data.draw(st.integers(1, 5))], 0, shape[dim])
    check_op(
        torch.index_select,
        [make(seed, shape, dtype), index],
        constants={1: dim},
        expect_op="aten::index_select.default",
    )


@given(
    shape=st.lists(dims, min_size=1, max_size=3),
    index_shape=st.lists(dims, min_size=1, max_size=2),
    dtype=st.sampled_from(ALL),
    seed=seeds,
)
def test_take(shape, index_shape, dtype, seed):
    n = math.prod(shape)
    index = integers(seed + 1, index_shape, -n, n)
    check_op(torch.take, [make(seed, shape, dtype), index], expect_op="aten::take.default")


@given(
    rows=st.integers(1, 10),
    width=dims,
    index_shape=st.lists(dims, min_size=1, max_size=3),
    dtype=st.sampled_from(FLOATS),
    seed=seeds,
)
def test_embedding(rows, width, index_shape, dtype, seed):
    weight = make(seed, (rows, width), dtype)
    index = integers(seed + 1, index_shape, 0, rows)
    check_op(
        lambda w, i: torch.nn.functional.embedding(i, w, padding_idx=0),
        [weight, index],
        expect_op="aten::embedding.default",
    )


# -- scatter ---------------------------------------------------------------------------------


@st.composite
def scatter_case(draw, unique: bool):
    """(self shape, dim, index, src shape): index within self, src at least as large."""
    shape = draw(st.lists(dims, min_size=1, max_size=3))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    seed = draw(seeds)
    index_shape = [draw(st.integers(1, s)) for s in shape]
    if unique:
        full = list(index_shape)
        full[dim] = shape[dim]
        index = unique_positions(seed, full, dim, draw(st.integers(1, shape[dim])))
    else:
        index_shape[dim] = draw(st.integers(1, 6))
        index = integers(seed, index_shape, 0, shape[dim])
    src_shape = [s + draw(st.integers(0, 1)) for s in index.shape]
    return shape, dim, index, src_shape


SCATTERS = {
    "aten::scatter.src": lambda x, d, i, s: torch.scatter(x, d, i, s),
    "aten::scatter_.src": lambda x, d, i, s: fresh(x).scatter_(d, i, s),
    "aten::scatter.value": lambda x, d, i, s: torch.scatter(x, d, i, 1.5),
    "aten::scatter_.value": lambda x, d, i, s: fresh(x).scatter_(d, i, -2),
}
SCATTER_REDUCES = {
    "aten::scatter.reduce": lambda x, d, i, s, r: torch.scatter(x, d, i, s, reduce=r),
    "aten::scatter_.reduce": lambda x, d, i, s, r: fresh(x).scatter_(d, i, s, reduce=r),
    "aten::scatter.value_reduce": lambda x, d, i, s, r: torch.scatter(x, d, i, 3, reduce=r),
    "aten::scatter_.value_reduce": lambda x, d, i, s, r: fresh(x).scatter_(d, i, 3, reduce=r),
    "aten::scatter_add.default": lambda x, d, i, s, r: torch.scatter_add(x, d, i, s),
    "aten::scatter_add_.default": lambda x, d, i, s, r: fresh(x).scatter_add_(d, i, s),
}


@pytest.mark.parametrize("key", sorted(SCATTERS))
@given(case=scatter_case(unique=True), dtype=st.sampled_from(NUMBERS), seed=seeds)
def test_scatter(key, case, dtype, seed):
    shape, dim, index, src_shape = case
    op = SCATTERS[key]
    check_op(
        lambda x, i, s: op(x, dim, i, s),
        [make(seed, shape, dtype), index, make(seed + 1, src_shape, dtype)],
        expect_op=key,
    )


@pytest.mark.parametrize("key", sorted(SCATTER_REDUCES))
@given(
    case=scatter_case(unique=False),
    reduce=st.sampled_from(["add", "multiply"]),
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_scatter_reduce_argument(key, case, reduce, dtype, seed):
    shape, dim, index, src_shape = case
    op = SCATTER_REDUCES[key]
    check_op(
        lambda x, i, s: op(x, dim, i, s, reduce),
        [make(seed, shape, dtype), index, make(seed + 1, src_shape, dtype)],
        expect_op=key,
        **tol(dtype),
    )


@pytest.mark.parametrize("key", ["aten::scatter_reduce.two", "aten::scatter_reduce_.two"])
@given(
    case=scatter_case(unique=False),
    reduce=st.sampled_from(["sum", "prod", "mean", "amax", "amin"]),
    include_self=st.booleans(),
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_scatter_reduce(key, case, reduce, include_self, dtype, seed):
    shape, dim, index, src_shape = case
    inplace = key == "aten::scatter_reduce_.two"

    def fn(x, i, s):
        x = fresh(x) if inplace else x
        method = x.scatter_reduce_ if inplace else x.scatter_reduce
        return method(dim, i, s, reduce, include_self=include_self)

    tensors = [make(seed, shape, dtype), index, make(seed + 1, src_shape, dtype)]
    check_op(fn, tensors, expect_op=key, **tol(dtype))


INDEX_OPS = {
    "aten::index_copy.default": lambda x, d, i, s: torch.index_copy(x, d, i, s),
    "aten::index_copy_.default": lambda x, d, i, s: fresh(x).index_copy_(d, i, s),
    "aten::index_add.default": lambda x, d, i, s: torch.index_add(x, d, i, s, alpha=2),
    "aten::index_add_.default": lambda x, d, i, s: fresh(x).index_add_(d, i, s),
    "aten::index_fill.int_Scalar": lambda x, d, i, s: torch.index_fill(x, d, i, -3),
    "aten::index_fill_.int_Scalar": lambda x, d, i, s: fresh(x).index_fill_(d, i, 2.5),
    "aten::index_fill.int_Tensor": lambda x, d, i, s: torch.index_fill(
        x, d, i, torch.scalar_tensor(7)
    ),
    "aten::index_fill_.int_Tensor": lambda x, d, i, s: fresh(x).index_fill_(
        d, i, torch.scalar_tensor(1)
    ),
}


@pytest.mark.parametrize("key", sorted(INDEX_OPS))
@given(
    shape=st.lists(dims, min_size=1, max_size=3),
    data=st.data(),
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_index_copy_add_fill(key, shape, data, dtype, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[dim]
    count = data.draw(st.integers(1, size))
    if "index_copy" in key:
        index = torch.randperm(size, generator=torch.Generator().manual_seed(seed))[:count]
    else:
        index = integers(seed, [data.draw(st.integers(1, 5))], -size if "fill" in key else 0, size)
    source_shape = list(shape)
    source_shape[dim] = index.shape[0]
    op = INDEX_OPS[key]
    check_op(
        lambda x, i, s: op(x, dim, i, s),
        [make(seed, shape, dtype), index, make(seed + 1, source_shape, dtype)],
        expect_op=key,
        **tol(dtype),
    )


@given(shape=st.lists(dims, min_size=0, max_size=2), alpha=st.booleans(), seed=seeds)
def test_index_add_of_bools(shape, alpha, seed):
    """bool index_add ORs ``source and alpha`` in (alpha=False: no Mul for bool)."""
    size = shape[0] if shape else 1
    index = torch.randperm(size, generator=torch.Generator().manual_seed(seed))

    def fn(x, i, s):  # a 0-d self comes squeezed from (1,): tonnx.testing feeds 0-d as (1,)
        if not shape:
            return x[0].index_add(0, i, s[0], alpha=alpha).unsqueeze(0)
        return x.index_add(0, i, s, alpha=alpha)

    tensors = [make(seed, shape or [1], torch.bool), index, make(seed + 1, shape or [1], torch.bool)]
    check_op(fn, tensors, expect_op="aten::index_add.default")


@pytest.mark.parametrize("key", sorted(INDEX_OPS))
@given(
    dim=st.sampled_from([0, -1]),
    index=st.sampled_from([[0], 0, [0, 0], []]),
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_index_copy_add_fill_on_a_0d_tensor(key, dim, index, dtype, seed):
    """torch indexes a 0-d tensor as one element along dim 0 (or -1)."""
    if "fill" not in key and index in ([0, 0], []):
        index = [0]  # index_add/index_copy take a 0-d source: one index only
    op = INDEX_OPS[key]

    def fn(x, i, s):  # the (1,) inputs squeezed: tonnx.testing feeds 0-d arrays as (1,)
        return op(x[0], dim, i.reshape(torch.tensor(index).shape), s[0]).unsqueeze(0)

    positions = torch.tensor(index, dtype=torch.int64).reshape(-1)
    check_op(fn, [make(seed, [1], dtype), positions, make(seed + 1, [1], dtype)], expect_op=key, **tol(dtype))


@given(
    shape=st.lists(dims, min_size=1, max_size=3),
    data=st.data(),
    dtype=st.sampled_from(ALL),
    seed=seeds,
)
def test_slice_scatter(shape, data, dtype, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[dim]
    start = data.draw(st.none() | st.integers(-size - 2, size))
    end = data.draw(st.none() | st.integers(-size - 2, size + 2))
    step = data.draw(st.integers(1, 3))
    src_shape = list(shape)
    src_shape[dim] = len(range(size)[slice(start, end, step)])
    check_op(
        lambda x, s: torch.slice_scatter(x, s, dim, start, end, step),
        [make(seed, shape, dtype), make(seed + 1, src_shape, dtype)],
        expect_op="aten::slice_scatter.default",
    )


@given(
    shape=st.lists(dims, min_size=2, max_size=4),  # a 1-D self would take a 0-d src input
    data=st.data(),
    dtype=st.sampled_from(ALL),
    seed=seeds,
)
def test_select_scatter(shape, data, dtype, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = data.draw(st.integers(-shape[dim], shape[dim] - 1))
    src_shape = [s for i, s in enumerate(shape) if i != dim % len(shape)]
    check_op(
        lambda x, s: torch.select_scatter(x, s, dim, index),
        [make(seed, shape, dtype), make(seed + 1, src_shape, dtype)],
        expect_op="aten::select_scatter.default",
    )


# -- masks -----------------------------------------------------------------------------------

MASKED_FILLS = {
    "aten::masked_fill.Scalar": lambda x, m: x.masked_fill(m, -1.5),
    "aten::masked_fill_.Scalar": lambda x, m: fresh(x).masked_fill_(m, 3),
    "aten::masked_fill.Tensor": lambda x, m: x.masked_fill(m, torch.scalar_tensor(2.0)),
    "aten::masked_fill_.Tensor": lambda x, m: fresh(x).masked_fill_(m, torch.scalar_tensor(1)),
}


@pytest.mark.parametrize("key", sorted(MASKED_FILLS))
@given(
    shape=st.lists(dims, min_size=1, max_size=4),
    mask_rank=st.integers(1, 4),
    dtype=st.sampled_from(ALL),
    seed=seeds,
)
def test_masked_fill(key, shape, mask_rank, dtype, seed):
    if dtype == torch.bool and "_." in key:
        dtype = torch.int64  # x * 1 is not boolean
    mask = make(seed + 1, shape[-min(mask_rank, len(shape)) :], torch.bool)
    op = MASKED_FILLS[key]
    check_op(op, [make(seed, shape, dtype), mask], expect_op=key)


@pytest.mark.parametrize("key", ["aten::masked_scatter.default", "aten::masked_scatter_.default"])
@given(
    shape=st.lists(dims, min_size=1, max_size=3),
    mask_rank=st.integers(1, 3),
    broadcast_self=st.booleans(),
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_masked_scatter(key, shape, mask_rank, broadcast_self, dtype, seed):
    mask = make(seed + 1, shape, torch.bool)
    self_shape = shape[-min(mask_rank, len(shape)) :]
    if key == "aten::masked_scatter_.default" or not broadcast_self:
        self_shape = shape  # in place, self cannot broadcast
    source = make(seed + 2, (math.prod(shape) + 2,), dtype)
    inplace = key == "aten::masked_scatter_.default"

    def fn(x, m, s):
        return fresh(x).masked_scatter_(m, s) if inplace else x.masked_scatter(m, s)

    check_op(fn, [make(seed, self_shape, dtype), mask, source], expect_op=key)


@given(shape=st.lists(dims, min_size=1, max_size=4), dtype=st.sampled_from(ALL), seed=seeds)
def test_nonzero(shape, dtype, seed):
    x = make(seed, shape, dtype)
    if dtype != torch.bool:
        x = x * (make(seed + 1, shape, torch.bool)).to(dtype)  # plenty of zeros
    check_op(torch.nonzero, [x], expect_op="aten::nonzero.default")


# -- topk, sort ------------------------------------------------------------------------------


@given(
    shape=st.lists(dims, min_size=1, max_size=3),
    data=st.data(),
    largest=st.booleans(),
    sorted_=st.booleans(),
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_topk(shape, data, largest, sorted_, dtype, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(1, shape[dim]))

    def fn(x):
        values, indices = torch.topk(x, k, dim, largest, sorted_)
        if sorted_:
            return values, indices
        # the order is unspecified: compare it sorted (sort is converted here too)
        return torch.sort(values, dim)[0]

    check_op(fn, [distinct(seed, shape, dtype)], expect_op="aten::topk.default")


SORTS = {
    "aten::sort.default": lambda x, d, desc: torch.sort(x, d, desc),
    "aten::sort.stable": lambda x, d, desc: torch.sort(x, dim=d, descending=desc, stable=True),
    "aten::argsort.default": lambda x, d, desc: torch.argsort(x, d, desc),
    "aten::argsort.stable": lambda x, d, desc: torch.argsort(
        x, dim=d, descending=desc, stable=True
    ),
}


@pytest.mark.parametrize("key", sorted(SORTS))
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    data=st.data(),
    descending=st.booleans(),
    seed=seeds,
)
def test_sort(key, shape, data, descending, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    if key.endswith("stable"):
        # ties: a stable sort keeps their order
        x = make(seed, shape, data.draw(st.sampled_from(ALL)))
    else:
        # an unstable sort orders ties as it likes: no ties (so no booleans)
        x = distinct(seed, shape, data.draw(st.sampled_from(NUMBERS)))
    op = SORTS[key]
    check_op(lambda x: op(x, dim, descending), [x], expect_op=key)


def test_sort_nan_is_largest():
    x = torch.tensor([[3.0, float("nan"), -1.0, 2.0], [float("nan"), 0.0, 5.0, 1.0]])
    check_op(lambda x: torch.sort(x, stable=True), [x], expect_op="aten::sort.stable")
    check_op(lambda x: torch.sort(x, descending=True), [x], expect_op="aten::sort.default")


class _TopK(torch.nn.Module):
    def __init__(self, k: int, dim: int, largest: bool, sorted_: bool):
        super().__init__()
        self.k, self.dim, self.largest, self.sorted_ = k, dim, largest, sorted_

    def forward(self, x):
        return torch.topk(x, self.k, self.dim, self.largest, self.sorted_)


@given(
    rows=st.integers(1, 3),
    length=st.sampled_from([1, 2, 4, 5, 8, 64, 130]),
    levels=st.integers(1, 3),
    data=st.data(),
    largest=st.booleans(),
    sorted_=st.booleans(),
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_topk_ties_go_to_the_lowest_index(rows, length, levels, data, largest, sorted_, dtype, seed):
    """Ties, down to every value equal (AFMoE's zero-initialized router): torch's CPU kernel
    leaves tied indices in its selection algorithm's order (unspecified; [2, 3] of four equal
    scores); the graph keeps ONNX TopK's rule, the lowest index first, sorted. The values
    are torch's exactly; the indices are those of a stable sort."""
    from tonnx.testing import run_onnxruntime

    k = data.draw(st.integers(1, length))
    dim = data.draw(st.sampled_from([-1, 0])) if rows > 1 else -1
    x = integers(seed, (rows, length), 0, levels).to(dtype)
    if dim == 0:
        x = x.T.contiguous()
    onx = tonnx.to_onnx(_TopK(k, dim, largest, sorted_), (x,))
    values, indices = run_onnxruntime(onx, [x])
    order = torch.sort(x, dim=dim, descending=largest, stable=True).indices.narrow(dim, 0, k)
    assert torch.equal(torch.from_numpy(indices), order)
    expected = torch.topk(x, k, dim, largest, sorted=True).values
    assert torch.equal(torch.from_numpy(values), expected)


# -- dynamic shapes --------------------------------------------------------------------------


class _Index(torch.nn.Module):
    def forward(self, x, i, j):
        return x[i, :, j]


class _PutMask(torch.nn.Module):
    def forward(self, x, m, v):
        return torch.ops.aten.index_put(x, [m], v, True)


class _SliceScatterTail(torch.nn.Module):
    def forward(self, x, s):
        return torch.slice_scatter(x, s, 0, x.shape[0] - 2)


class _SelectScatterLast(torch.nn.Module):
    def forward(self, x, s):
        return torch.select_scatter(x, s, 0, x.shape[0] - 1)


class _TopkHalf(torch.nn.Module):
    def forward(self, x):
        return torch.topk(x, x.shape[1] // 2, dim=1)


def _dynamic_cases():
    t = torch.tensor
    return [
        (
            _Index(),
            [
                (make(0, (5, 3, 4), torch.float32), t([0, 4, -1]), t([[1], [2]])),
                (make(1, (7, 3, 4), torch.float32), t([6, 0, 1, 2]), t([[3]])),
            ],
            ({0: "a"}, {0: "n"}, {0: "m"}),
            "aten::index.Tensor",
        ),
        (
            _PutMask(),
            [
                (
                    make(0, (5, 3, 4), torch.float32),
                    make(1, (5, 3), torch.bool),
                    make(2, (4,), torch.float32),
                ),
                (
                    make(3, (7, 3, 4), torch.float32),
                    make(4, (7, 3), torch.bool),
                    make(5, (4,), torch.float32),
                ),
            ],
            ({0: "a"}, {0: "a"}, None),
            "aten::index_put.default",
        ),
        (
            _SliceScatterTail(),
            [
                (make(0, (5, 3), torch.int64), make(1, (2, 3), torch.int64)),
                (make(2, (9, 3), torch.int64), make(3, (2, 3), torch.int64)),
            ],
            ({0: "a"}, None),
            "aten::slice_scatter.default",
        ),
        (
            _SelectScatterLast(),
            [
                (make(0, (5, 3), torch.float32), make(1, (3,), torch.float32)),
                (make(2, (2, 3), torch.float32), make(3, (3,), torch.float32)),
            ],
            ({0: "a"}, None),
            "aten::select_scatter.default",
        ),
        (
            _TopkHalf(),
            [(distinct(0, (3, 8), torch.float32),), (distinct(1, (5, 6), torch.float32),)],
            ({0: "a", 1: "b"},),
            "aten::topk.default",
        ),
    ]


@pytest.mark.parametrize("case", range(5))
def test_dynamic_shapes(case):
    model, inputs, dynamic_shapes, key = _dynamic_cases()[case]
    check_model(
        model, inputs[0], other_inputs=inputs[1:], dynamic_shapes=dynamic_shapes, expect_ops=[key]
    )


def test_newer_opset():
    x, i, j = make(0, (5, 3, 4), torch.float32), torch.tensor([0, 4, -1]), torch.tensor([[1], [2]])
    check_op(lambda x, i, j: x[i, :, j], [x, i, j], expect_op="aten::index.Tensor", target_opset=23)
