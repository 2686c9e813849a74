"""Hypothesis tests of the shape and view converters, with static and dynamic shapes."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, check_op

COVERS = {
    "aten::view.default",
    "aten::_unsafe_view.default",
    "aten::view_copy.default",
    "aten::reshape.default",
    "aten::_reshape_alias.default",
    "aten::view_as.default",
    "aten::reshape_as.default",
    "aten::flatten.using_ints",
    "aten::ravel.default",
    "aten::unflatten.int",
    "aten::expand.default",
    "aten::expand_copy.default",
    "aten::expand_as.default",
    "aten::permute.default",
    "aten::permute_copy.default",
    "aten::transpose.int",
    "aten::transpose_.default",
    "aten::transpose_copy.int",
    "aten::swapaxes.default",
    "aten::swapdims.default",
    "aten::mT.default",
    "aten::movedim.int",
    "aten::moveaxis.int",
    "aten::movedim.intlist",
    "aten::squeeze.default",
    "aten::squeeze_.default",
    "aten::squeeze_copy.default",
    "aten::squeeze.dim",
    "aten::squeeze_.dim",
    "aten::squeeze_copy.dim",
    "aten::squeeze.dims",
    "aten::squeeze_.dims",
    "aten::squeeze_copy.dims",
    "aten::unsqueeze.default",
    "aten::unsqueeze_.default",
    "aten::unsqueeze_copy.default",
    "aten::clone.default",
    "aten::contiguous.default",
    "aten::alias.default",
    "aten::alias_copy.default",
    "aten::detach.default",
    "aten::detach_.default",
    "aten::lift_fresh_copy.default",
    "aten::cat.default",
    "aten::concat.default",
    "aten::concatenate.default",
    "aten::hstack.default",
    "aten::vstack.default",
    "aten::stack.default",
    "aten::split.Tensor",
    "aten::split_copy.Tensor",
    "aten::split.sizes",
    "aten::split_with_sizes.default",
    "aten::split_with_sizes_copy.default",
    "aten::chunk.default",
    "aten::tensor_split.sections",
    "aten::tensor_split.indices",
    "aten::unbind.int",
    "aten::unbind_copy.int",
    "aten::slice.Tensor",
    "aten::slice_copy.Tensor",
    "aten::select.int",
    "aten::select_copy.int",
    "aten::narrow.default",
    "aten::narrow.Tensor",
    "aten::flip.default",
    "aten::roll.default",
    "aten::repeat.default",
    "aten::tile.default",
    "aten::constant_pad_nd.default",
    "aten::pad.default",
    "aten::reflection_pad1d.default",
    "aten::reflection_pad2d.default",
    "aten::reflection_pad3d.default",
    "aten::replication_pad1d.default",
    "aten::replication_pad2d.default",
    "aten::replication_pad3d.default",
    "aten::pixel_shuffle.default",
    "aten::pixel_unshuffle.default",
    "aten::diagonal.default",
    "aten::diagonal_copy.default",
    "aten::unfold.default",
    "aten::as_strided.default",
    "aten::as_strided_copy.default",
}

A = torch.ops.aten
DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool]
seeds = st.integers(0, 2**16)
sizes = st.integers(1, 4)
shapes = st.lists(sizes, max_size=4)
dtypes = st.sampled_from(DTYPES)


def make(seed: int, shape, dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype)
    return torch.randint(0 if dtype == torch.uint8 else -50, 50, shape, generator=gen).to(dtype)


def no_0d(fn, tensors):
    """(fn, tensors) where no input nor result is 0-d: 0-d inputs are fed as (1,) and
    squeezed inside, 0-d results unsqueezed.

    Works around tonnx.testing turning 0-d arrays into shape (1,) (np.ascontiguousarray),
    for the inputs it feeds as for the results it compares.
    """
    scalars = [t.dim() == 0 for t in tensors]

    def one(t):
        return t.unsqueeze(0) if isinstance(t, torch.Tensor) and t.dim() == 0 else t

    def wrapped(*args):
        result = fn(*(a.squeeze(0) if s else a for a, s in zip(args, scalars)))
        return tuple(one(t) for t in result) if isinstance(result, (tuple, list)) else one(result)

    return wrapped, [t.reshape(1) if s else t for t, s in zip(tensors, scalars)]


def run(fn, tensors, key, **kwargs):
    fn, tensors = no_0d(fn, tensors)
    check_op(fn, tensors, expect_op=key, atol=0, rtol=0, **kwargs)


class One(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class Two(One):
    def forward(self, x, y):
        return self.fn(x, y)


def run_dynamic(fn, tensors, other, dynamic_shapes, key):
    """Exports with dynamic dimensions, runs on the export inputs and on ``other``."""
    model = One(fn) if len(tensors) == 1 else Two(fn)
    check_model(
        model, tuple(tensors), dynamic_shapes=dynamic_shapes, other_inputs=[tuple(other)],
        expect_ops=[key], atol=0, rtol=0,
    )


# -- reshapes ---------------------------------------------------------------------------------


def contiguous_strides(shape) -> list[int]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.insert(0, step)
        step *= d
    return strides


RESHAPES = {
    "aten::view.default": lambda x, shape, like: A.view.default(x, shape),
    "aten::_unsafe_view.default": lambda x, shape, like: A._unsafe_view.default(x, shape),
    "aten::view_copy.default": lambda x, shape, like: A.view_copy.default(x, shape),
    "aten::reshape.default": lambda x, shape, like: A.reshape.default(x.mT if x.dim() > 1 else x, shape),
    "aten::_reshape_alias.default": lambda x, shape, like: A._reshape_alias.default(x, like.shape, contiguous_strides(like.shape)),
    "aten::view_as.default": lambda x, shape, like: A.view_as.default(x, like),
    "aten::reshape_as.default": lambda x, shape, like: A.reshape_as.default(x, like),
}


@pytest.mark.parametrize("key", sorted(RESHAPES))
@given(data=st.data(), shape=shapes, dtype=dtypes, seed=seeds)
def test_reshapes(key, data, shape, dtype, seed):
    numel = math.prod(shape)
    candidates = [[numel], list(reversed(shape)), [1, *shape, 1], [numel, 1], []] if numel == 1 else [
        [numel], list(reversed(shape)), [1, *shape], [shape[0], numel // shape[0]]
    ]
    target = data.draw(st.sampled_from(candidates))
    like = torch.zeros(target)
    if target and data.draw(st.booleans()):
        target = list(target)
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    fn = RESHAPES[key]
    if key.endswith("_as.default"):
        run(lambda x, y: fn(x, target, y), [make(seed, shape, dtype), like], key)
    else:
        run(lambda x: fn(x, target, like), [make(seed, shape, dtype)], key)


@given(data=st.data(), shape=shapes, dtype=dtypes, seed=seeds)
def test_flatten_ravel_unflatten(data, shape, dtype, seed):
    rank = len(shape)
    start = data.draw(st.integers(-max(rank, 1), max(rank, 1) - 1))
    end = data.draw(st.integers(start % max(rank, 1), max(rank, 1) - 1))
    x = make(seed, shape, dtype)
    run(lambda t: A.flatten.using_ints(t, start, end), [x], "aten::flatten.using_ints")
    run(lambda t: A.ravel.default(t), [x], "aten::ravel.default")
    if rank:
        dim = data.draw(st.integers(-rank, rank - 1))
        split = [shape[dim], 1] if data.draw(st.booleans()) else [1, -1, 1]
        run(lambda t: A.unflatten.int(t, dim, split), [x], "aten::unflatten.int")


DYNAMIC_RESHAPES = [
    # the view(x.shape[0], -1) pattern: a constant shape with 0 (copy) and -1
    ("aten::view.default", lambda x: x.view(x.shape[0], -1), (3, 4, 5), {0: "batch"}),
    # a product of symbolic sizes: the other dims read from Shape, the product -1
    ("aten::view.default", lambda x: x.view(x.shape[0] * x.shape[1], x.shape[2]), (3, 4, 5), {0: "a", 1: "b", 2: "c"}),
    ("aten::reshape.default", lambda x: x.reshape(x.shape[2], -1), (3, 4, 5), {0: "a", 1: "b", 2: "c"}),
    # two unknown products: the sizes torch computed are used
    ("aten::view.default", lambda x: x.view(x.shape[0] * x.shape[1], x.shape[2] * x.shape[3]), (2, 3, 4, 5), {0: "a", 1: "b", 2: "c", 3: "d"}),
    ("aten::_unsafe_view.default", lambda x: A._unsafe_view(x, [x.shape[1], x.shape[0] * 5]), (3, 4, 5), {0: "a", 1: "b"}),
    ("aten::flatten.using_ints", lambda x: x.flatten(1), (3, 4, 5), {0: "a", 1: "b", 2: "c"}),
    ("aten::flatten.using_ints", lambda x: x.flatten(0, 1), (3, 4, 5), {1: "b", 2: "c"}),
    ("aten::unflatten.int", lambda x: x.unflatten(0, (-1, 1)), (3, 4, 5), {0: "a", 2: "c"}),
    ("aten::ravel.default", lambda x: x.ravel(), (3, 4, 5), {0: "a", 2: "c"}),
    ("aten::expand.default", lambda x: x[:, :1].expand(-1, 4, -1), (3, 4, 5), {0: "a", 2: "c"}),
    ("aten::expand.default", lambda x: x[:1, :, None].expand(x.shape[0], -1, 3, -1), (3, 4, 5), {0: "a", 2: "c"}),
    ("aten::expand_as.default", lambda x: x[:1].expand_as(x), (3, 4, 5), {0: "a", 2: "c"}),
]


@pytest.mark.parametrize(("key", "fn", "shape", "dims"), DYNAMIC_RESHAPES)
@given(other=st.lists(st.integers(2, 6), min_size=4, max_size=4), dtype=dtypes, seed=seeds)
def test_dynamic_reshapes(key, fn, shape, dims, other, dtype, seed):
    second = [other[i] if i in dims else s for i, s in enumerate(shape)]
    x, y = make(seed, shape, dtype), make(seed + 1, second, dtype)
    run_dynamic(fn, [x], [y], ({i: n for i, n in dims.items()},), key)


# -- expand -----------------------------------------------------------------------------------

EXPANDS = {
    "aten::expand.default": lambda x, size, like: A.expand.default(x, size),
    "aten::expand_copy.default": lambda x, size, like: A.expand_copy.default(x, size),
    "aten::expand_as.default": lambda x, size, like: A.expand_as.default(x, like),
}


@pytest.mark.parametrize("key", sorted(EXPANDS))
@given(data=st.data(), shape=shapes, dtype=dtypes, seed=seeds)
def test_expand(key, data, shape, dtype, seed):
    ones = data.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
    small = [1 if one else d for one, d in zip(ones, shape)]
    lead = data.draw(st.lists(sizes, max_size=2))
    size = lead + [d if data.draw(st.booleans()) else -1 for d in shape]  # -1 keeps the size
    x = make(seed, small, dtype)
    like = torch.empty(lead + shape)
    fn = EXPANDS[key]
    tensors = [x, like] if key == "aten::expand_as.default" else [x]
    run(lambda t, *other: fn(t, size, other[0] if other else None), tensors, key)


# -- permutations -----------------------------------------------------------------------------

PERMUTES = {
    "aten::permute.default": lambda x, a, b, perm: A.permute.default(x, perm),
    "aten::permute_copy.default": lambda x, a, b, perm: A.permute_copy.default(x, perm),
    "aten::transpose.int": lambda x, a, b, perm: A.transpose.int(x, a, b),
    "aten::transpose_.default": lambda x, a, b, perm: A.clone.default(x).transpose_(a, b),
    "aten::transpose_copy.int": lambda x, a, b, perm: A.transpose_copy.int(x, a, b),
    "aten::swapaxes.default": lambda x, a, b, perm: A.swapaxes.default(x, a, b),
    "aten::swapdims.default": lambda x, a, b, perm: A.swapdims.default(x, a, b),
    "aten::mT.default": lambda x, a, b, perm: A.mT.default(x),
    "aten::movedim.int": lambda x, a, b, perm: A.movedim.int(x, a, b),
    "aten::moveaxis.int": lambda x, a, b, perm: A.moveaxis.int(x, a, b),
    "aten::movedim.intlist": lambda x, a, b, perm: A.movedim.intlist(x, perm[:2], [b, a] if a % x.dim() != b % x.dim() else [a]),
}


@pytest.mark.parametrize("key", sorted(PERMUTES))
@given(data=st.data(), shape=shapes, dtype=dtypes, seed=seeds)
def test_permutations(key, data, shape, dtype, seed):
    if key in ("aten::mT.default", "aten::movedim.intlist") and len(shape) < 2:
        shape = [*shape, 2, 3][:2] if len(shape) < 2 else shape
    rank = max(len(shape), 1)
    a, b = data.draw(st.integers(-rank, rank - 1)), data.draw(st.integers(-rank, rank - 1))
    perm = data.draw(st.permutations(range(len(shape))))
    if key == "aten::movedim.intlist" and a % rank == b % rank:
        perm = perm[:1]
    run(lambda x: PERMUTES[key](x, a, b, list(perm)), [make(seed, shape, dtype)], key)


# -- squeeze, unsqueeze -----------------------------------------------------------------------

SQUEEZES = {
    "aten::squeeze.default": lambda x, dims: A.squeeze.default(x),
    "aten::squeeze_.default": lambda x, dims: A.clone.default(x).squeeze_(),
    "aten::squeeze_copy.default": lambda x, dims: A.squeeze_copy.default(x),
    "aten::squeeze.dim": lambda x, dims: A.squeeze.dim(x, dims[0]),
    "aten::squeeze_.dim": lambda x, dims: A.clone.default(x).squeeze_(dims[0]),
    "aten::squeeze_copy.dim": lambda x, dims: A.squeeze_copy.dim(x, dims[0]),
    "aten::squeeze.dims": lambda x, dims: A.squeeze.dims(x, dims),
    "aten::squeeze_.dims": lambda x, dims: A.clone.default(x).squeeze_(dims),
    "aten::squeeze_copy.dims": lambda x, dims: A.squeeze_copy.dims(x, dims),
    "aten::unsqueeze.default": lambda x, dims: A.unsqueeze.default(x, dims[0]),
    "aten::unsqueeze_.default": lambda x, dims: A.clone.default(x).unsqueeze_(dims[0]),
    "aten::unsqueeze_copy.default": lambda x, dims: A.unsqueeze_copy.default(x, dims[0]),
}


@pytest.mark.parametrize("key", sorted(SQUEEZES))
@given(data=st.data(), shape=st.lists(st.integers(1, 3), min_size=1, max_size=4), dtype=dtypes, seed=seeds)
def test_squeezes(key, data, shape, dtype, seed):
    rank = len(shape) + (1 if "unsqueeze" in key else 0)
    dims = data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=len(shape), unique_by=lambda d: d % rank))
    run(lambda x: SQUEEZES[key](x, dims), [make(seed, shape, dtype)], key)


# -- copies that are no-ops -------------------------------------------------------------------

NO_OPS = {
    "aten::clone.default": lambda x: A.clone.default(x),
    "aten::contiguous.default": lambda x: A.contiguous.default(x.mT if x.dim() > 1 else x),
    "aten::alias.default": lambda x: A.alias.default(x),
    "aten::alias_copy.default": lambda x: A.alias_copy.default(x),
    "aten::detach.default": lambda x: A.detach.default(x),
    "aten::detach_.default": lambda x: A.clone.default(x).detach_(),
    "aten::lift_fresh_copy.default": lambda x: torch.cat([x.reshape(-1), torch.tensor([1, 0], dtype=x.dtype)]),
}


@pytest.mark.parametrize("key", sorted(NO_OPS))
@given(shape=shapes, dtype=dtypes, seed=seeds)
def test_no_ops(key, shape, dtype, seed):
    run(NO_OPS[key], [make(seed, shape, dtype)], key)


# -- concatenation ----------------------------------------------------------------------------

CATS = {
    "aten::cat.default": lambda ts, dim: A.cat.default(ts, dim),
    "aten::concat.default": lambda ts, dim: A.concat.default(ts, dim),
    "aten::concatenate.default": lambda ts, dim: A.concatenate.default(ts, dim),
    "aten::stack.default": lambda ts, dim: A.stack.default(ts, dim),
    "aten::hstack.default": lambda ts, dim: A.hstack.default(ts),
    "aten::vstack.default": lambda ts, dim: A.vstack.default(ts),
}


@pytest.mark.parametrize("key", sorted(CATS))
@given(
    data=st.data(),
    shape=st.lists(sizes, min_size=1, max_size=3),
    types=st.lists(dtypes, min_size=1, max_size=3),
    empty=st.booleans(),
    seed=seeds,
)
def test_concatenations(key, data, shape, types, empty, seed):
    rank = len(shape)
    stacking = key in ("aten::stack.default",)
    dim = data.draw(st.integers(-rank - stacking, rank - 1 + stacking))
    axis = dim % rank if not stacking else None
    if key == "aten::hstack.default":
        axis = 0 if rank == 1 else 1
    if key == "aten::vstack.default":
        axis = 0 if rank > 1 else None
    tensors = []
    for i, dtype in enumerate(types):
        own = list(shape)
        if axis is not None:
            own[axis] = data.draw(sizes)
        tensors.append(make(seed + i, own, dtype))
    if empty and key in ("aten::cat.default", "aten::hstack.default") and not stacking:
        tensors.insert(1, torch.zeros(0, dtype=types[0]))  # 1-D empty tensors are skipped
    run(lambda *ts: CATS[key](list(ts), dim), tensors, key)


# -- splits -----------------------------------------------------------------------------------

SPLITS = {
    "aten::split.Tensor": lambda x, n, sizes, dim: A.split.Tensor(x, n, dim),
    "aten::split_copy.Tensor": lambda x, n, sizes, dim: A.split_copy.Tensor(x, n, dim),
    "aten::split.sizes": lambda x, n, sizes, dim: A.split.sizes(x, sizes, dim),
    "aten::split_with_sizes.default": lambda x, n, sizes, dim: A.split_with_sizes.default(x, sizes, dim),
    "aten::split_with_sizes_copy.default": lambda x, n, sizes, dim: A.split_with_sizes_copy.default(x, sizes, dim),
    "aten::chunk.default": lambda x, n, sizes, dim: A.chunk.default(x, n, dim),
    "aten::tensor_split.sections": lambda x, n, sizes, dim: A.tensor_split.sections(x, n, dim),
    "aten::tensor_split.indices": lambda x, n, sizes, dim: A.tensor_split.indices(x, sizes, dim),
    "aten::unbind.int": lambda x, n, sizes, dim: A.unbind.int(x, dim),
    "aten::unbind_copy.int": lambda x, n, sizes, dim: A.unbind_copy.int(x, dim),
}


@pytest.mark.parametrize("key", sorted(SPLITS))
@given(
    data=st.data(),
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=3),
    dtype=dtypes,
    only_last=st.booleans(),
    seed=seeds,
)
def test_splits(key, data, shape, dtype, only_last, seed):
    rank = len(shape)
    dim = data.draw(st.integers(-rank, rank - 1))
    total = shape[dim]
    n = data.draw(st.integers(1, total))
    cuts = sorted(data.draw(st.lists(st.integers(0, total), max_size=3)))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, total])]
    if key == "aten::tensor_split.indices":
        sizes = cuts
    fn = SPLITS[key]

    def split(x):
        pieces = fn(x, n, sizes, dim)
        return pieces[-1] if only_last else tuple(pieces)  # unused outputs, or all of them

    run(split, [make(seed, shape, dtype)], key)


DYNAMIC_SPLITS = [
    ("aten::split.Tensor", lambda x: x.split(2, 1), {1: "n"}),
    ("aten::chunk.default", lambda x: x.chunk(2, 1), {0: "b", 1: "n"}),
    ("aten::split_with_sizes.default", lambda x: x.split([1, x.shape[1] - 1], 1), {1: "n"}),
]


@pytest.mark.parametrize(("key", "fn", "dims"), DYNAMIC_SPLITS)
@given(batch=st.integers(2, 5), seed=seeds)
def test_dynamic_splits(key, fn, dims, batch, seed):
    # the number of pieces is fixed by the export; only sizes that keep it may vary
    rows = batch if 0 in dims else 3
    x, y = make(seed, [3, 4], torch.float32), make(seed, [rows, 3 + batch % 2], torch.float32)
    run_dynamic(fn, [x], [y], (dims,), key)


# -- slicing ----------------------------------------------------------------------------------

bounds = st.one_of(st.none(), st.integers(-6, 6), st.sampled_from([2**63 - 1, -(2**63), 100, -100]))

SLICES = {
    "aten::slice.Tensor": lambda x, dim, start, end, step: A.slice.Tensor(x, dim, start, end, step),
    "aten::slice_copy.Tensor": lambda x, dim, start, end, step: A.slice_copy.Tensor(x, dim, start, end, step),
    "aten::select.int": lambda x, dim, start, end, step: A.select.int(x, dim, start),
    "aten::select_copy.int": lambda x, dim, start, end, step: A.select_copy.int(x, dim, start),
    "aten::narrow.default": lambda x, dim, start, end, step: A.narrow.default(x, dim, start, end),
    "aten::narrow.Tensor": lambda x, dim, start, end, step: A.narrow.Tensor(x, dim, torch.tensor(start), end),
}


@pytest.mark.parametrize("key", sorted(SLICES))
@given(data=st.data(), shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), dtype=dtypes, seed=seeds)
def test_slices(key, data, shape, dtype, seed):
    rank = len(shape)
    dim = data.draw(st.integers(-rank, rank - 1))
    size = shape[dim]
    start, end, step = data.draw(bounds), data.draw(bounds), data.draw(st.integers(1, 3))
    if key.startswith("aten::select"):
        start = data.draw(st.integers(-size, size - 1))
    if key.startswith("aten::narrow"):
        start = data.draw(st.integers(-size, size - 1) if key == "aten::narrow.default" else st.integers(0, size - 1))
        end = data.draw(st.integers(0, size - start % size))  # the length
    run(lambda x: SLICES[key](x, dim, start, end, step), [make(seed, shape, dtype)], key)


DYNAMIC_SLICES = [
    ("aten::slice.Tensor", lambda x, y: x[:, : y.shape[0]], {0: "n"}),
    ("aten::slice.Tensor", lambda x, y: x[:, y.shape[0] - 2 :: 2], {0: "n"}),
    ("aten::select.int", lambda x, y: x[:, y.shape[0] - 1], {0: "n"}),
    ("aten::narrow.default", lambda x, y: x.narrow(1, y.shape[0] - 2, 2), {0: "n"}),
]


@pytest.mark.parametrize(("key", "fn", "dims"), DYNAMIC_SLICES)
@given(n=st.integers(2, 6), seed=seeds)
def test_dynamic_slices(key, fn, dims, n, seed):
    x = make(seed, [3, 7], torch.float32)
    run_dynamic(fn, [x, torch.zeros(3)], [x, torch.zeros(n)], (None, dims), key)


def test_narrow_from_the_end_of_a_dynamic_dimension():
    x, y = torch.randn(5, 3), torch.randn(8, 3)
    run_dynamic(lambda t: t.narrow(0, -2, 2), [x], [y], ({0: "n"},), "aten::narrow.default")


# -- flip, roll, repeat, tile -----------------------------------------------------------------


@given(data=st.data(), shape=st.lists(sizes, min_size=1, max_size=4), dtype=dtypes, seed=seeds)
def test_flip_roll(data, shape, dtype, seed):
    rank = len(shape)
    dims = data.draw(st.lists(st.integers(-rank, rank - 1), max_size=rank, unique_by=lambda d: d % rank))
    shifts = data.draw(st.lists(st.integers(-9, 9), min_size=max(len(dims), 1), max_size=max(len(dims), 1)))
    x = make(seed, shape, dtype)
    run(lambda t: A.flip.default(t, dims), [x], "aten::flip.default")
    run(lambda t: A.roll.default(t, shifts, dims), [x], "aten::roll.default")


@given(shift=st.integers(-9, 9), n=st.integers(2, 7), seed=seeds)
def test_roll_on_a_dynamic_dimension(shift, n, seed):
    x, y = make(seed, [5, 3], torch.float32), make(seed, [n, 3], torch.float32)
    run_dynamic(lambda t: t.roll(shift, 0), [x], [y], ({0: "n"},), "aten::roll.default")
    run_dynamic(lambda t: t.roll(shift), [x], [y], ({0: "n"},), "aten::roll.default")


@given(data=st.data(), shape=shapes, dtype=dtypes, seed=seeds)
def test_repeat_tile(data, shape, dtype, seed):
    rank = len(shape)
    repeats = data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank + 2))
    dims = data.draw(st.lists(st.integers(1, 3), max_size=rank + 1))
    x = make(seed, shape, dtype)
    run(lambda t: A.repeat.default(t, repeats), [x], "aten::repeat.default")
    run(lambda t: A.tile.default(t, dims), [x], "aten::tile.default")


# -- padding ----------------------------------------------------------------------------------


@given(
    data=st.data(),
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    dtype=dtypes,
    value=st.sampled_from([0, 1, -2.5, math.inf]),
    seed=seeds,
)
def test_constant_pad(data, shape, dtype, value, seed):
    rank = len(shape)
    count = data.draw(st.integers(1, rank))
    pad = []
    for i in range(count):
        size = shape[rank - 1 - i]
        left = data.draw(st.integers(-size + 1, 3))
        pad += [left, data.draw(st.integers(-(size + min(left, 0)) + 1, 3))]
    if dtype == torch.bool or not dtype.is_floating_point:
        value = int(value != 0) if dtype in (torch.bool, torch.uint8) else 3
    x = make(seed, shape, dtype)
    run(lambda t: A.constant_pad_nd.default(t, pad, value), [x], "aten::constant_pad_nd.default")
    run(lambda t: A.pad.default(t, pad, "constant", None if value == 0 else float(value)), [x], "aten::pad.default")


MODE_PADS = {
    "aten::pad.default": None,
    "aten::reflection_pad1d.default": (A.reflection_pad1d.default, 1),
    "aten::reflection_pad2d.default": (A.reflection_pad2d.default, 2),
    "aten::reflection_pad3d.default": (A.reflection_pad3d.default, 3),
    "aten::replication_pad1d.default": (A.replication_pad1d.default, 1),
    "aten::replication_pad2d.default": (A.replication_pad2d.default, 2),
    "aten::replication_pad3d.default": (A.replication_pad3d.default, 3),
}


@pytest.mark.parametrize("key", sorted(MODE_PADS))
@given(
    data=st.data(),
    mode=st.sampled_from(["reflect", "replicate", "circular"]),
    batch=st.lists(st.integers(1, 2), min_size=1, max_size=2),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.float16, torch.int64]),
    opset=st.sampled_from([18, 19, 23]),
    seed=seeds,
)
def test_mode_pads(key, data, mode, batch, dtype, opset, seed):
    op, count = MODE_PADS[key] or (None, data.draw(st.integers(1, 3)))
    mode = mode if op is None else ("reflect" if "reflection" in key else "replicate")
    spatial = data.draw(st.lists(st.integers(2, 5), min_size=count, max_size=count))
    pad = []
    for size in reversed(spatial):
        # torch crops a negative pad first, then pads the rest: reflect needs pads < size,
        # circular pads <= size
        crop = data.draw(st.sampled_from([0, 0, 1, 2]))
        limit = {"reflect": size - 2, "circular": size - 1, "replicate": 3}[mode] if crop else {"reflect": size - 1, "circular": size, "replicate": 3}[mode]
        pair = [data.draw(st.integers(0, max(limit, 0))), data.draw(st.integers(0, max(limit, 0)))]
        if crop:
            pair[crop - 1] = -1
        pad += pair
    x = make(seed, batch + spatial, dtype)
    fn = (lambda t: A.pad.default(t, pad, mode)) if op is None else (lambda t: op(t, pad))
    run(fn, [x], key, target_opset=opset)



@given(
    data=st.data(),
    shape=st.lists(st.integers(2, 4), min_size=2, max_size=4),
    mode=st.sampled_from(["constant", "reflect", "replicate", "circular"]),
    dynamic=st.booleans(),
    seed=seeds,
)
def test_pad_between_transposes(data, shape, mode, dynamic, seed):
    """A pad of some axes between a permutation and its inverse (ConvBERT's span conv):
    onnxruntime's transpose optimizer pushes the Transpose through Pad and permutes its
    ``pads`` as if they covered every axis, so a Pad with ``axes`` failed in a Gather
    ("indices element out of data bounds") or padded the wrong axes."""
    rank = len(shape)
    perm = data.draw(st.permutations(range(rank)).filter(lambda p: list(p) != sorted(p)))
    inverse = [perm.index(i) for i in range(rank)]
    permuted = [shape[p] for p in perm]
    count = data.draw(st.integers(1, min(rank - 1, 3) if mode != "constant" else rank))
    pad = []
    for size in reversed(permuted[rank - count:]):
        limit = {"constant": 3, "replicate": 3, "reflect": size - 1, "circular": size}[mode]
        pad += [data.draw(st.integers(0, limit)), data.draw(st.integers(0, limit))]
    x = make(seed, shape, torch.float32)
    fn = lambda t: F.pad(t.permute(*perm), pad, mode).permute(*inverse) * 2  # noqa: E731
    if not dynamic:
        check_model(One(fn), (x,), atol=0, rtol=0)
        return
    # the padded axes keep their sizes (reflect needs pad < size); the others are dynamic
    padded = {perm[rank - 1 - i] for i in range(count)}
    dims = {i: f"d{i}" for i in range(rank) if i not in padded}
    other = make(seed + 1, [s + 1 if i in dims else s for i, s in enumerate(shape)], torch.float32)
    check_model(One(fn), (x,), dynamic_shapes=({**dims},), other_inputs=[(other,)], atol=0, rtol=0)


# -- pixel shuffles, diagonal, unfold, as_strided ---------------------------------------------


@given(
    batch=st.lists(st.integers(1, 2), max_size=2),
    c=st.integers(1, 2),
    h=st.integers(1, 3),
    w=st.integers(1, 3),
    r=st.integers(1, 3),
    dtype=dtypes,
    seed=seeds,
)
def test_pixel_shuffles(batch, c, h, w, r, dtype, seed):
    x = make(seed, [*batch, c * r * r, h, w], dtype)
    run(lambda t: A.pixel_shuffle.default(t, r), [x], "aten::pixel_shuffle.default")
    y = make(seed, [*batch, c, h * r, w * r], dtype)
    run(lambda t: A.pixel_unshuffle.default(t, r), [y], "aten::pixel_unshuffle.default")


@given(h=st.integers(2, 5), w=st.integers(2, 5), seed=seeds)
def test_pixel_shuffles_with_dynamic_sizes(h, w, seed):
    x, y = make(seed, [2, 8, 3, 4], torch.float32), make(seed, [3, 8, h, w], torch.float32)
    dims = ({0: "b", 2: "h", 3: "w"},)
    run_dynamic(lambda t: F.pixel_shuffle(t, 2), [x], [y], dims, "aten::pixel_shuffle.default")
    # integers take the Reshape/Transpose path (DepthToSpace lacks them)
    run_dynamic(lambda t: F.pixel_shuffle(t, 2), [x.long()], [y.long()], dims, "aten::pixel_shuffle.default")
    twice = ({0: "b", 2: 2 * torch.export.Dim("h", max=32), 3: 2 * torch.export.Dim("w", max=32)},)
    x, y = make(seed, [2, 3, 4, 6], torch.float32), make(seed, [3, 3, 2 * h, 2 * w], torch.float32)
    run_dynamic(lambda t: F.pixel_unshuffle(t, 2), [x], [y], twice, "aten::pixel_unshuffle.default")


@pytest.mark.parametrize("key", ["aten::diagonal.default", "aten::diagonal_copy.default"])
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=2, max_size=4), dtype=dtypes, seed=seeds)
def test_diagonal(key, data, shape, dtype, seed):
    rank = len(shape)
    d1 = data.draw(st.integers(-rank, rank - 1))
    d2 = data.draw(st.integers(-rank, rank - 1).filter(lambda d: d % rank != d1 % rank))
    offset = data.draw(st.integers(-4, 4))
    op = A.diagonal.default if key == "aten::diagonal.default" else A.diagonal_copy.default
    run(lambda t: op(t, offset, d1, d2), [make(seed, shape, dtype)], key)


@given(offset=st.integers(-3, 3), n=st.integers(2, 6), seed=seeds)
def test_diagonal_with_dynamic_sizes(offset, n, seed):
    x, y = make(seed, [3, 2, 4], torch.float32), make(seed, [n, 2, 8 - n], torch.float32)
    run_dynamic(lambda t: t.diagonal(offset, 0, 2), [x], [y], ({0: "a", 2: "b"},), "aten::diagonal.default")


@given(data=st.data(), shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), dtype=dtypes, seed=seeds)
def test_unfold(data, shape, dtype, seed):
    rank = len(shape)
    dim = data.draw(st.integers(-rank, rank - 1))
    size = data.draw(st.integers(1, shape[dim]))
    step = data.draw(st.integers(1, 3))
    run(lambda t: A.unfold.default(t, dim, size, step), [make(seed, shape, dtype)], "aten::unfold.default")


@given(dim=st.sampled_from([0, -1]), size=st.integers(0, 1), step=st.integers(1, 3), dtype=dtypes, seed=seeds)
def test_unfold_of_a_0d_tensor(dim, size, step, dtype, seed):
    """torch gives the element as a window of ``size`` (0 or 1) items."""
    run(lambda t: A.unfold.default(t, dim, size, step), [make(seed, [], dtype)], "aten::unfold.default")


@given(n=st.integers(3, 9), seed=seeds)
def test_unfold_on_a_dynamic_dimension(n, seed):
    x, y = make(seed, [5, 2], torch.float32), make(seed, [n, 2], torch.float32)
    run_dynamic(lambda t: t.unfold(0, 3, 2), [x], [y], ({0: "n"},), "aten::unfold.default")


@pytest.mark.parametrize("key", ["aten::as_strided.default", "aten::as_strided_copy.default"])
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), dtype=dtypes, seed=seeds)
def test_as_strided(key, data, shape, dtype, seed):
    numel = math.prod(shape)
    size = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    stride = data.draw(st.lists(st.integers(0, 3), min_size=len(size), max_size=len(size)))
    reach = sum((s - 1) * st_ for s, st_ in zip(size, stride))
    if reach >= numel:  # stay inside the tensor: a view of its own elements
        size, stride = [numel], [1]
        reach = numel - 1
    offset = data.draw(st.integers(0, numel - 1 - reach))
    if data.draw(st.booleans()):  # the trivial case: a reshape
        size, stride, offset = shape, contiguous_strides(shape), 0
    op = A.as_strided.default if key == "aten::as_strided.default" else A.as_strided_copy.default
    run(lambda t: op(t, size, stride, offset), [make(seed, shape, dtype)], key)


def test_as_strided_of_a_transposed_tensor_is_refused():
    class Model(torch.nn.Module):
        def forward(self, x):
            return x.t().as_strided((2, 2), (1, 2))

    with pytest.raises(tonnx.UnsupportedError, match="as_strided"):
        tonnx.to_onnx(Model(), (torch.randn(3, 4),))
