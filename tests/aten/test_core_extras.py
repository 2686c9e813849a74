"""Hypothesis tests of Core ATen overloads (distances, col2im, item, embedding_bag)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import check_model, check_op

COVERS = {
    "aten::_cdist_forward.default",
    "aten::cdist.default",
    "aten::_pdist_forward.default",
    "aten::pdist.default",
    "aten::col2im.default",
    "aten::im2col.default",
    "aten::_local_scalar_dense.default",
    "aten::item.default",
    "aten::_embedding_bag.default",
    "aten::embedding_bag.default",
    "aten::embedding_bag.padding_idx",
}

A = torch.ops.aten
F = torch.nn.functional
FLOATS = [torch.float32, torch.float64]
NORMS = [0.0, 1.0, 2.0, 3.0, 0.5, math.inf]
seeds = st.integers(0, 2**16)
CDIST_MODES = [
    "use_mm_for_euclid_dist_if_necessary",
    "use_mm_for_euclid_dist",
    "donot_use_mm_for_euclid_dist",
]
BAG_KEYS = [
    "aten::_embedding_bag.default",
    "aten::embedding_bag.default",
    "aten::embedding_bag.padding_idx",
]


def make(seed: int, shape, dtype: torch.dtype, integral: bool = False) -> torch.Tensor:
    """Random values; ``integral`` ones are small integers (ties and zero differences)."""
    gen = torch.Generator().manual_seed(seed)
    if integral or not dtype.is_floating_point:
        return torch.randint(-2, 3, shape, generator=gen).to(dtype)
    return (torch.rand(shape, generator=gen) * 2 - 1).to(dtype)


@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    rows=st.tuples(st.integers(1, 30), st.integers(1, 6)),
    m=st.integers(1, 5),
    p=st.sampled_from(NORMS),
    mode=st.sampled_from([None, 0, 1, 2]),
    integral=st.booleans(),
    dtype=st.sampled_from(FLOATS),
    seed=seeds,
)
@pytest.mark.parametrize("key", ["aten::_cdist_forward.default", "aten::cdist.default"])
def test_cdist(key, batch, rows, m, p, mode, integral, dtype, seed):
    x1 = make(seed, (*batch, rows[0], m), dtype, integral)
    x2 = make(seed + 1, (*batch, rows[1], m), dtype, integral)
    if key == "aten::cdist.default":
        x2 = x2[(0,) * len(batch)] if batch and seed % 2 else x2  # broadcast batch dims

        kwargs = {} if mode is None else {"compute_mode": CDIST_MODES[mode]}

        def fn(a, b):
            return torch.cdist(a, b, p=p, **kwargs)
    else:

        def fn(a, b):
            return A._cdist_forward.default(a, b, p, mode)

    check_op(fn, [x1, x2], expect_op=key, atol=1e-4, rtol=1e-4)


@given(
    n=st.integers(1, 7),
    m=st.integers(1, 5),
    p=st.sampled_from(NORMS),
    integral=st.booleans(),
    dtype=st.sampled_from(FLOATS),
    seed=seeds,
)
@pytest.mark.parametrize("key", ["aten::_pdist_forward.default", "aten::pdist.default"])
def test_pdist(key, n, m, p, integral, dtype, seed):
    x = make(seed, (n, m), dtype, integral)
    if key == "aten::pdist.default":

        def fn(a):
            return F.pdist(a, p)
    else:

        def fn(a):
            return A._pdist_forward.default(a, p)

    check_op(fn, [x], expect_op=key, atol=1e-4, rtol=1e-4)


def _blocks(size: int, k: int, d: int, pad: int, s: int) -> int:
    return (size + 2 * pad - d * (k - 1) - 1) // s + 1


@given(
    batch=st.sampled_from([(), (1,), (2,)]),
    channels=st.integers(1, 3),
    out=st.tuples(st.integers(2, 7), st.integers(2, 7)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    stride=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dtype=st.sampled_from(FLOATS),
    seed=seeds,
)
def test_col2im(batch, channels, out, kernel, dilation, padding, stride, dtype, seed):
    blocks = [_blocks(*args) for args in zip(out, kernel, dilation, padding, stride)]
    if min(blocks) < 1:
        blocks, padding = [_blocks(o, 1, 1, 0, s) for o, s in zip(out, stride)], (0, 0)
        kernel, dilation = (1, 1), (1, 1)
    x = make(seed, (*batch, channels * kernel[0] * kernel[1], blocks[0] * blocks[1]), dtype)

    def fn(a):
        return F.fold(a, out, kernel, dilation=dilation, padding=padding, stride=stride)

    # onnxruntime's CPU Col2Im is float32 only: float64 runs in onnx's reference evaluator
    runtime = "onnxruntime" if dtype == torch.float32 else "reference"
    check_op(fn, [x], expect_op="aten::col2im.default", atol=1e-5, rtol=1e-5, runtime=runtime)


class _Unfold(torch.nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x):
        return F.unfold(x, **self.kwargs)


@given(
    batch=st.sampled_from([(), (1,), (2,)]),
    channels=st.integers(1, 3),
    size=st.tuples(st.integers(1, 7), st.integers(1, 7)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dynamic=st.booleans(),
    dtype=st.sampled_from(FLOATS),
    seed=seeds,
)
def test_im2col(batch, channels, size, kernel, dilation, padding, stride, dynamic, dtype, seed):
    """F.unfold, also with dynamic batch and spatial sizes (ConvBERT unfolds the sequence
    axis): torch's decomposition specialized them, the converter keeps them dynamic."""
    if min(_blocks(*args) for args in zip(size, kernel, dilation, padding, stride)) < 1:
        size = tuple(s + (k - 1) * d for s, k, d in zip(size, kernel, dilation))
    x = make(seed, (*batch, channels, *size), dtype)
    model = _Unfold(kernel_size=kernel, dilation=dilation, padding=padding, stride=stride)
    if not dynamic:
        check_op(model.forward, [x], expect_op="aten::im2col.default", atol=0, rtol=0)
        return
    other = make(seed + 1, (*[b + 1 for b in batch], channels, *[s + 2 for s in size]), dtype)
    dims = {i: f"d{i}" for i in range(x.dim()) if i != len(batch)}
    check_model(
        model, (x,), dynamic_shapes=(dims,), other_inputs=[(other,)], expect_ops=["aten::im2col.default"],
        atol=0, rtol=0,
    )


class _ScalarTimes(torch.nn.Module):
    """``b * <a reduced to a python scalar>``: the scalar is a 0-d tensor in ONNX."""

    def __init__(self, key: str, reduce: bool):
        super().__init__()
        self.key, self.reduce = key, reduce

    def forward(self, a, b):
        a = a.sum() if self.reduce else a
        scalar = a.item() if self.key == "aten::item.default" else A._local_scalar_dense.default(a)
        return b * scalar + scalar


@given(
    reduce=st.booleans(),
    shape=st.sampled_from([(), (1,), (1, 1)]),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.int64, torch.int32]),
    other=st.sampled_from([torch.float32, torch.float64, torch.int64]),
    seed=seeds,
)
@pytest.mark.parametrize("key", ["aten::_local_scalar_dense.default", "aten::item.default"])
def test_local_scalar_dense(key, reduce, shape, dtype, other, seed):
    a = make(seed, (3,) if reduce else shape, dtype)
    b = make(seed + 1, (2, 3), other)
    check_model(_ScalarTimes(key, reduce), (a, b), expect_ops=[key], atol=1e-5, rtol=1e-5)


def _bag_inputs(seed: int, vocab: int, lengths: list[int], dtype, index_dtype):
    gen = torch.Generator().manual_seed(seed)
    weight = make(seed, (vocab, 3), dtype)
    indices = torch.randint(0, vocab, (sum(lengths),), generator=gen).to(index_dtype)
    offsets = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()[:-1]]).to(index_dtype)
    return weight, indices, offsets


@given(
    vocab=st.integers(1, 8),
    lengths=st.lists(st.integers(0, 4), min_size=1, max_size=4),
    mode=st.sampled_from([0, 1, 2]),
    weighted=st.booleans(),
    last_offset=st.booleans(),
    padding_idx=st.sampled_from([-1, 0, 2]),
    dtype=st.sampled_from(FLOATS),
    index_dtype=st.sampled_from([torch.int64, torch.int32]),
    seed=seeds,
)
@pytest.mark.parametrize("key", BAG_KEYS)
def test_embedding_bag(
    key, vocab, lengths, mode, weighted, last_offset, padding_idx, dtype, index_dtype, seed
):
    weight, indices, offsets = _bag_inputs(seed, vocab, lengths, dtype, index_dtype)
    if last_offset:
        offsets = torch.cat([offsets, torch.tensor([indices.numel()], dtype=index_dtype)])
    padding_idx = padding_idx if padding_idx < vocab else -1
    tensors = [weight, indices, offsets]
    if weighted and mode == 0:
        tensors.append(make(seed + 2, (indices.numel(),), dtype))

    def fn(w, i, o, psw=None):
        if key == "aten::_embedding_bag.default":
            args = (False, mode, False, psw, last_offset, padding_idx)
            return A._embedding_bag.default(w, i, o, *args)[0]
        if key == "aten::embedding_bag.default":
            return A.embedding_bag.default(w, i, o, False, mode, False, psw, last_offset)[0]
        pad = None if padding_idx < 0 else padding_idx
        kwargs = {"per_sample_weights": psw, "include_last_offset": last_offset, "padding_idx": pad}
        return F.embedding_bag(i, w, o, mode=["sum", "mean", "max"][mode], **kwargs)

    check_op(fn, tensors, expect_op=key, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_indices(mode):
    """2-D indices: F.embedding_bag flattens them into equal bags (offsets by arange)."""
    weight, indices = make(0, (6, 4), torch.float32), torch.tensor([[1, 2, 3], [5, 0, 0]])

    def fn(w, i):
        return F.embedding_bag(i, w, mode=mode)

    check_op(fn, [weight, indices], expect_op="aten::embedding_bag.padding_idx")


def test_embedding_bag_side_outputs_are_refused():
    """offset2bag, bag_size and max_indices depend on torch's kernel path: refused, not guessed."""
    from tonnx import UnsupportedError

    weight, indices, offsets = _bag_inputs(0, 5, [2, 1], torch.float32, torch.int64)

    def fn(w, i, o):
        return A._embedding_bag.default(w, i, o)[2]

    with pytest.raises(UnsupportedError, match="offset2bag"):
        check_op(fn, [weight, indices, offsets], expect_op="aten::_embedding_bag.default")


@given(small=st.integers(2, 25), large=st.integers(26, 40), m=st.integers(1, 4), seed=seeds)
def test_cdist_dynamic_rows(small, large, m, seed):
    """With dynamic row counts, torch picks the kernel at run time (rows > 25: matmul)."""
    rows = torch.export.Dim("rows", min=2, max=64)
    x1, x2 = make(seed, (small, m), torch.float32), make(seed + 1, (3, m), torch.float32)
    other = (make(seed + 2, (large, m), torch.float32), x2)

    def fn(a, b):
        return A._cdist_forward.default(a, b, 2.0, None)

    check_op(
        fn, [x1, x2], expect_op="aten::_cdist_forward.default", atol=1e-4, rtol=1e-4,
        dynamic_shapes=({0: rows}, None), other_inputs=[other],
    )


@given(
    lengths=st.lists(st.integers(1, 4), min_size=2, max_size=4),
    mode=st.sampled_from([0, 1, 2]),
    seed=seeds,
)
def test_embedding_bag_dynamic(lengths, mode, seed):
    """Dynamic numbers of indices and bags."""
    weight, indices, offsets = _bag_inputs(seed, 7, lengths, torch.float32, torch.int64)
    more = _bag_inputs(seed + 1, 7, [*lengths, 3], torch.float32, torch.int64)
    dynamic = ({}, {0: torch.export.Dim("n", min=2)}, {0: torch.export.Dim("bags", min=2)})

    def fn(w, i, o):
        return A._embedding_bag.default(w, i, o, False, mode)[0]

    check_op(
        fn, [weight, indices, offsets], expect_op="aten::_embedding_bag.default",
        dynamic_shapes=dynamic, other_inputs=[more],
    )
