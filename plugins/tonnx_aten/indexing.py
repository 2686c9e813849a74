"""Indexing: index, index_put, gather, scatter, embedding, masked ops, topk, sort.

Index tensors keep their sign: Gather, GatherND, GatherElements, ScatterND and
ScatterElements all accept indices in ``[-size, size)`` as torch does. Where a reduction
runs on a type onnxruntime's CPU kernels lack (float16 ``add``), it runs on a wider type
that holds every value exactly, then casts back.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, is_float, numpy_dtype, operand, output_used, unused_output

_INT64 = TensorProto.INT64
_BOOL = TensorProto.BOOL
#: index tensors of these types are masks (uint8 is torch's deprecated byte mask)
_MASK_TYPES = (TensorProto.BOOL, TensorProto.UINT8)
#: reductions of Scatter* computed in float: onnxruntime has no float16 kernels for them
_SCATTER_WIDE = {
    TensorProto.FLOAT16: TensorProto.FLOAT,
    TensorProto.BFLOAT16: TensorProto.FLOAT,
    # onnxruntime has no bool min/max reduction; 0/1 in int32 reduce exactly, Cast maps back
    TensorProto.BOOL: TensorProto.INT32,
}
#: types Where lacks in onnxruntime, widened exactly (bool goes through And/Or)
_WHERE_WIDE = {TensorProto.INT16: TensorProto.INT32, TensorProto.UINT16: TensorProto.INT32}
#: types TopK lacks in onnxruntime, widened exactly (order is preserved)
_TOPK_WIDE = {
    TensorProto.BOOL: TensorProto.INT32,
    TensorProto.UINT16: TensorProto.INT32,
    TensorProto.UINT32: TensorProto.INT64,
    TensorProto.BFLOAT16: TensorProto.FLOAT,
}
#: torch's scatter_reduce names -> ScatterElements' reduction
_REDUCTIONS = {"sum": "add", "mean": "add", "prod": "mul", "amax": "max", "amin": "min"}
#: torch's scatter(reduce=) names
_SCATTER_REDUCE = {"add": "add", "multiply": "mul"}


def _const(value, elem: int) -> np.ndarray:
    return np.array(value, dtype=numpy_dtype(elem))


def _ints(values) -> np.ndarray:
    return np.array(list(values), dtype=np.int64)


def _require_rank(g, x: str, what: str) -> int:
    rank = g.get_rank(x)
    if rank == 0:
        raise UnsupportedError(f"{what} on a 0-d tensor is not supported.")
    return rank


def _where(g, cond: str, a: str, b: str, elem: int, outputs):
    """Where(cond, a, b) for every element type onnxruntime runs."""
    if elem == _BOOL:
        return g.op.Or(g.op.And(cond, a), g.op.And(g.op.Not(cond), b), outputs=outputs)
    wide = _WHERE_WIDE.get(elem)
    if wide is None:
        return g.op.Where(cond, a, b, outputs=outputs)
    chosen = g.op.Where(cond, g.op.Cast(a, to=wide), g.op.Cast(b, to=wide))
    return g.op.Cast(chosen, to=elem, outputs=outputs)


def _scatter(g, op_type: str, data: str, indices: str, updates: str, reduction, outputs, **attrs):
    """ScatterND/ScatterElements, reductions widened for types onnxruntime lacks."""
    elem = g.get_type(data)
    wide = _SCATTER_WIDE.get(elem) if reduction else None
    if wide is None:
        return g.make_node(
            op_type, [data, indices, cast(g, updates, elem)], outputs, reduction=reduction, **attrs
        )
    result = g.make_node(
        op_type,
        [cast(g, data, wide), indices, cast(g, updates, wide)],
        1,
        reduction=reduction,
        **attrs,
    )
    return g.op.Cast(result, to=elem, outputs=outputs)


# -- advanced indexing -------------------------------------------------------------------------


def _advanced(g, indices) -> tuple[list[int], list[str], list]:
    """Dimensions indexed, their int64 index tensors and shape keys; masks become NonZero rows."""
    dims, tensors, keys = [], [], []
    dim = 0
    for index in indices:
        if index is None:
            dim += 1
            continue
        if g.get_type(index) not in _MASK_TYPES:
            dims.append(dim)
            tensors.append(cast(g, index, _INT64))
            keys.append(g.get_shape(index))
            dim += 1
            continue
        k = g.get_rank(index)
        if k == 0:
            raise UnsupportedError("Indexing with a 0-d boolean mask is not supported.")
        nonzero = g.op.NonZero(cast(g, index, _BOOL))
        for j in range(k):
            dims.append(dim + j)
            tensors.append(g.op.Gather(nonzero, np.array(j, dtype=np.int64), axis=0))
            keys.append(("mask", index))
        dim += k
    if not tensors:
        raise UnsupportedError("Indexing without any index tensor is not supported.")
    return dims, tensors, keys


def _broadcast(g, tensors: list[str], keys: list) -> tuple[list[str], int]:
    """The index tensors broadcast together (as torch does), and the rank of their shape."""
    rank = max(1 if k[:1] == ("mask",) else len(k) for k in keys)
    if all(k == keys[0] for k in keys):
        return tensors, rank
    if all(type(d) is int for k in keys for d in k):  # masks' keys hold a name: dynamic
        target = tuple(np.broadcast_shapes(*keys))
        shape = _ints(target)
        return [t if k == target else g.op.Expand(t, shape) for t, k in zip(tensors, keys)], rank
    total = tensors[0]
    for t in tensors[1:]:
        total = g.op.Add(total, t)
    shape = g.op.Shape(total)
    return [g.op.Expand(t, shape) for t in tensors], rank


def _stack_last(g, tensors: list[str]) -> str:
    minus_one = np.array([-1], dtype=np.int64)
    parts = [g.op.Unsqueeze(t, minus_one) for t in tensors]
    return parts[0] if len(parts) == 1 else g.op.Concat(*parts, axis=-1)


def _front_perm(dims: list[int], rank: int) -> list[int]:
    """Permutation moving the indexed dimensions first, in order."""
    return dims + [d for d in range(rank) if d not in dims]


def _placement(dims: list[int], n_batch: int, rank: int) -> list[int] | None:
    """Permutation from GatherND's layout (index dims first) to torch's, None if equal.

    torch puts the index dimensions where the indexed ones were when these are adjacent,
    first otherwise (numpy's rule).
    """
    first = dims[0]
    adjacent = dims == list(range(first, first + len(dims)))
    if not adjacent or first == 0:
        return None
    total = n_batch + rank - len(dims)
    return (
        list(range(n_batch, n_batch + first))
        + list(range(n_batch))
        + list(range(n_batch + first, total))
    )


def _transpose(g, x: str, perm: list[int]) -> str:
    return x if perm == sorted(perm) else g.op.Transpose(x, perm=perm)


def _inverse(perm: list[int]) -> list[int]:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


# aten::index.Tensor
def aten_index(g, sts, outputs, self, indices):
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor"
    dims, tensors, keys = _advanced(g, indices)
    if len(tensors) == 1:
        return g.op.Gather(self, tensors[0], axis=dims[0], outputs=outputs)
    rank = g.get_rank(self)
    tensors, n_batch = _broadcast(g, tensors, keys)
    data = _transpose(g, self, _front_perm(dims, rank))
    placement = _placement(dims, n_batch, rank)
    if placement is None:
        return g.op.GatherND(data, _stack_last(g, tensors), outputs=outputs)
    gathered = g.op.GatherND(data, _stack_last(g, tensors))
    return g.op.Transpose(gathered, perm=placement, outputs=outputs)


def _put_updates(g, values: str, elem: int, dims, n_batch: int, rank: int, shape: str) -> str:
    """``values`` (torch's layout of ``self[indices]``) in ScatterND's layout and shape."""
    out_rank = n_batch + rank - len(dims)
    v_rank = g.get_rank(values)
    values = cast(g, values, elem)
    if v_rank > out_rank:
        raise UnsupportedError(
            f"index_put with values of rank {v_rank} for an indexing result of rank {out_rank}."
        )
    if v_rank < out_rank:
        values = g.op.Unsqueeze(values, _ints(range(out_rank - v_rank)))
    placement = _placement(dims, n_batch, rank)
    if placement is not None:
        values = g.op.Transpose(values, perm=_inverse(placement))
    return g.op.Expand(values, shape)


# aten::index_put.default
def aten_index_put(g, sts, outputs, self, indices, values, accumulate=False):
    "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor"
    dims, tensors, keys = _advanced(g, indices)
    rank = g.get_rank(self)
    tensors, n_batch = _broadcast(g, tensors, keys)
    perm = _front_perm(dims, rank)
    data = _transpose(g, self, perm)
    index = _stack_last(g, tensors)
    shape = g.op.Concat(
        g.op.Shape(index, start=0, end=n_batch), g.op.Shape(data, start=len(dims)), axis=0
    )
    updates = _put_updates(g, values, sts.dtype, dims, n_batch, rank, shape)
    reduction = "add" if accumulate else None
    if perm == sorted(perm):
        return _scatter(g, "ScatterND", data, index, updates, reduction, outputs)
    scattered = _scatter(g, "ScatterND", data, index, updates, reduction, 1)
    return g.op.Transpose(scattered, perm=_inverse(perm), outputs=outputs)


# -- gather, scatter ---------------------------------------------------------------------------


# aten::index_select.default
def aten_index_select(g, sts, outputs, self, dim, index):
    "index_select(Tensor self, int dim, Tensor index) -> Tensor"
    if g.get_rank(self) == 0:
        # the only valid index selects the one element
        return g.op.Identity(self, outputs=outputs)
    if g.get_rank(index) == 0:
        index = g.op.Unsqueeze(index, _ints([0]))
    return g.op.Gather(self, index, axis=dim, outputs=outputs)


# aten::gather.default
def aten_gather(g, sts, outputs, self, dim, index, sparse_grad=False):
    "gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor"
    _require_rank(g, self, "gather")
    return g.op.GatherElements(self, index, axis=dim, outputs=outputs)


# aten::take.default
def aten_take(g, sts, outputs, self, index):
    "take(Tensor self, Tensor index) -> Tensor"
    flat = g.op.Reshape(self, _ints([-1]))
    return g.op.Gather(flat, index, axis=0, outputs=outputs)


# aten::embedding.default
def aten_embedding(
    g, sts, outputs, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False
):
    "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor"
    # padding_idx only changes the gradient
    return g.op.Gather(weight, indices, axis=0, outputs=outputs)


def _fit_src(g, src: str, index: str) -> str:
    """``src`` cut to the shape of ``index``: torch only reads that corner of it."""
    src_shape, index_shape = g.get_shape(src), g.get_shape(index)
    if src_shape is not None and src_shape == index_shape:
        return src
    rank = g.get_rank(index)
    starts = _ints([0] * rank)
    return g.op.Slice(src, starts, g.op.Shape(index), _ints(range(rank)))


def _scatter_elements(g, sts, outputs, self, dim, index, src, reduction):
    _require_rank(g, self, "scatter")
    updates = cast(g, _fit_src(g, src, index), sts.dtype)
    return _scatter(g, "ScatterElements", self, index, updates, reduction, outputs, axis=dim)


def _filled_like(g, value, elem: int, like: str) -> str:
    return g.op.Expand(operand(g, value, elem), g.op.Shape(like))


def _scatter_reduction(reduce: str, table: dict) -> str:
    found = table.get(reduce)
    if found is None:
        raise UnsupportedError(f"scatter reduction {reduce!r} is not supported ({sorted(table)}).")
    return found


# aten::scatter.src
def aten_scatter_src(g, sts, outputs, self, dim, index, src):
    "scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"
    return _scatter_elements(g, sts, outputs, self, dim, index, src, None)


# aten::scatter.value
def aten_scatter_value(g, sts, outputs, self, dim, index, value):
    "scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"
    src = _filled_like(g, value, sts.dtype, index)
    return _scatter_elements(g, sts, outputs, self, dim, index, src, None)


# aten::scatter.reduce
def aten_scatter_reduce(g, sts, outputs, self, dim, index, src, reduce):
    "scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor"
    reduction = _scatter_reduction(reduce, _SCATTER_REDUCE)
    return _scatter_elements(g, sts, outputs, self, dim, index, src, reduction)


# aten::scatter.value_reduce
def aten_scatter_value_reduce(g, sts, outputs, self, dim, index, value, reduce):
    "scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor"
    reduction = _scatter_reduction(reduce, _SCATTER_REDUCE)
    src = _filled_like(g, value, sts.dtype, index)
    return _scatter_elements(g, sts, outputs, self, dim, index, src, reduction)


# aten::scatter_add.default
def aten_scatter_add(g, sts, outputs, self, dim, index, src):
    "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"
    return _scatter_elements(g, sts, outputs, self, dim, index, src, "add")


def _reduction_identity(reduce: str, elem: int):
    """The value a scatter_reduce starts from when include_self=False."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if elem == _BOOL:
        return reduce == "amin"
    if is_float(elem):
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(numpy_dtype(elem))
    return info.min if reduce == "amax" else info.max


def _floor_divide(g, a: str, b: str, elem: int, outputs):
    if is_float(elem):
        return g.op.Div(a, b, outputs=outputs)
    # b > 0: a - a mod b (python's sign rule) is an exact multiple of b
    return g.op.Div(g.op.Sub(a, g.op.Mod(a, b, fmod=0)), b, outputs=outputs)


def _scatter_mean(g, self, total, dim, index, src, include_self, elem, outputs):
    ones = _filled_like(g, 1, elem, src)
    start = _filled_like(g, 1 if include_self else 0, elem, self)
    count = _scatter(g, "ScatterElements", start, index, ones, "add", 1, axis=dim)
    count = g.op.Max(count, _const(1, elem))
    return _floor_divide(g, total, count, elem, outputs)


# aten::scatter_reduce.two
def aten_scatter_reduce_two(g, sts, outputs, self, dim, index, src, reduce, include_self=True):
    "scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor"
    _require_rank(g, self, "scatter_reduce")
    elem = sts.dtype
    reduction = _scatter_reduction(reduce, _REDUCTIONS)
    src = cast(g, _fit_src(g, src, index), elem)
    base = self
    if not include_self:
        identity = _filled_like(g, _reduction_identity(reduce, elem), elem, index)
        base = _scatter(g, "ScatterElements", self, index, identity, None, 1, axis=dim)
    if reduce != "mean":
        return _scatter(g, "ScatterElements", base, index, src, reduction, outputs, axis=dim)
    total = _scatter(g, "ScatterElements", base, index, src, reduction, 1, axis=dim)
    return _scatter_mean(g, self, total, dim, index, src, include_self, elem, outputs)


def _along(g, index: str, dim: int, rank: int) -> str:
    """A 1-D (or 0-d) index reshaped to ``[1, .., n, .., 1]`` with ``n`` at ``dim``."""
    shape = [1] * rank
    shape[dim] = -1
    return g.op.Reshape(index, _ints(shape))


def _vector(g, x: str) -> str:
    return g.op.Reshape(x, _ints([-1]))


def _index_scatter(g, sts, outputs, self, dim, index, source, reduction, alpha=1):
    rank = g.get_rank(self)
    if rank == 0:  # torch indexes a 0-d tensor as one element along dim 0
        self, index, source = _vector(g, self), _vector(g, index), _vector(g, source)
        flat = _scatter_along(g, sts, 1, self, 0, 1, index, source, 1, reduction, alpha)
        return g.op.Reshape(flat, _ints([]), outputs=outputs)
    return _scatter_along(g, sts, outputs, self, dim % rank, rank, index, source, g.get_rank(source), reduction, alpha)


def _scatter_along(g, sts, outputs, self, dim, rank, index, source, source_rank, reduction, alpha):
    if source_rank < rank:
        source = g.op.Unsqueeze(source, _ints([dim]))
    source = cast(g, source, sts.dtype)
    if alpha != 1 and sts.dtype == _BOOL:  # alpha=False: bool has no Mul
        source = g.op.And(source, np.array(bool(alpha)))
    elif alpha != 1:
        source = g.op.Mul(source, operand(g, alpha, sts.dtype))
    positions = g.op.Expand(_along(g, index, dim, rank), g.op.Shape(source))
    return _scatter(g, "ScatterElements", self, positions, source, reduction, outputs, axis=dim)


# aten::index_copy.default
def aten_index_copy(g, sts, outputs, self, dim, index, source):
    "index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor"
    return _index_scatter(g, sts, outputs, self, dim, index, source, None)


# aten::index_add.default
def aten_index_add(g, sts, outputs, self, dim, index, source, alpha=1):
    "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor"
    return _index_scatter(g, sts, outputs, self, dim, index, source, "add", alpha)


# aten::index_fill.int_Scalar
def aten_index_fill(g, sts, outputs, self, dim, index, value):
    "index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"
    rank = g.get_rank(self)
    if rank == 0:  # torch indexes a 0-d tensor as one element along dim 0
        flat = _fill_along(g, sts, 1, _vector(g, self), 0, 1, index, value)
        return g.op.Reshape(flat, _ints([]), outputs=outputs)
    return _fill_along(g, sts, outputs, self, dim % rank, rank, index, value)


def _fill_along(g, sts, outputs, self, dim, rank, index, value):
    flat = _vector(g, index)
    shape = g.op.Concat(
        g.op.Shape(self, start=0, end=dim),
        g.op.Shape(flat),
        g.op.Shape(self, start=dim + 1),
        axis=0,
    )
    positions = g.op.Expand(_along(g, flat, dim, rank), shape)
    fill = g.op.Expand(operand(g, value, sts.dtype), shape)
    return _scatter(g, "ScatterElements", self, positions, fill, None, outputs, axis=dim)


def _start_index(g, start, size) -> int | str:
    """torch's slice start: None is 0, negative counts from the end, clamped at 0."""
    if start is None:
        return 0
    if type(start) is int:
        if start >= 0:
            return start
        if type(size) is int:
            return max(start + size, 0)
        return g.op.Max(
            g.op.Add(size, np.array(start, dtype=np.int64)), np.array(0, dtype=np.int64)
        )
    size_t = operand(g, size, _INT64)
    wrapped = g.op.Max(g.op.Add(start, size_t), np.array(0, dtype=np.int64))
    return g.op.Where(g.op.Less(start, np.array(0, dtype=np.int64)), wrapped, start)


def _dim_size(g, x: str, dim: int) -> int | str:
    size = g.get_shape(x)[dim]
    if type(size) is int:
        return size
    return g.op.Squeeze(g.op.Shape(x, start=dim, end=dim + 1), _ints([0]))


def _slice_positions(g, start, length, step) -> str:
    """``start + step * arange(length)`` as a 1-D int64 tensor."""
    if type(start) is int and type(length) is int:
        return _ints(range(start, start + length * step, step))
    limit = g.op.Add(
        operand(g, start, _INT64),
        g.op.Mul(operand(g, length, _INT64), np.array(step, dtype=np.int64)),
    )
    return g.op.Range(operand(g, start, _INT64), limit, np.array(step, dtype=np.int64))


# aten::slice_scatter.default
def aten_slice_scatter(g, sts, outputs, self, src, dim=0, start=None, end=None, step=1):
    "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor"
    if type(step) is not int:
        raise UnsupportedError("slice_scatter with a symbolic step is not supported.")
    rank = _require_rank(g, self, "slice_scatter")
    dim %= rank
    first = _start_index(g, start, _dim_size(g, self, dim))
    positions = _slice_positions(g, first, _dim_size(g, src, dim), step)
    positions = g.op.Expand(_along(g, positions, dim, rank), g.op.Shape(src))
    return _scatter(g, "ScatterElements", self, positions, src, None, outputs, axis=dim)


# aten::select_scatter.default
def aten_select_scatter(g, sts, outputs, self, src, dim, index):
    "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor"
    rank = _require_rank(g, self, "select_scatter")
    dim %= rank
    updates = g.op.Unsqueeze(src, _ints([dim]))
    position = g.op.Reshape(operand(g, index, _INT64), _ints([1] * rank))
    positions = g.op.Expand(position, g.op.Shape(updates))
    return _scatter(g, "ScatterElements", self, positions, updates, None, outputs, axis=dim)


# -- masks -------------------------------------------------------------------------------------


# aten::masked_fill.Scalar
def aten_masked_fill(g, sts, outputs, self, mask, value):
    "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor"
    elem = sts.dtype
    mask = cast(g, mask, _BOOL)
    return _where(g, mask, operand(g, value, elem), cast(g, self, elem), elem, outputs)


# aten::masked_scatter.default
def aten_masked_scatter(g, sts, outputs, self, mask, source):
    "masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor"
    if not sts.shape:
        raise UnsupportedError("masked_scatter on 0-d tensors is not supported.")
    data = self if g.get_shape(self) == sts.shape else g.op.Expand(self, g.op.Shape(mask))
    if g.get_shape(mask) != sts.shape:
        mask = g.op.Expand(mask, g.op.Shape(data))
    mask = cast(g, mask, _BOOL)
    # the k-th True position (row-major) takes the k-th element of source
    positions = g.op.Transpose(g.op.NonZero(mask), perm=[1, 0])
    count = g.op.Shape(positions, start=0, end=1)
    flat = g.op.Reshape(cast(g, source, sts.dtype), _ints([-1]))
    updates = g.op.Slice(flat, _ints([0]), count)
    return g.op.ScatterND(data, positions, updates, outputs=outputs)


# aten::nonzero.default
def aten_nonzero(g, sts, outputs, self):
    "nonzero(Tensor self) -> Tensor"
    _require_rank(g, self, "nonzero")
    found = g.op.NonZero(cast(g, self, _BOOL))
    return g.op.Transpose(found, perm=[1, 0], outputs=outputs)


# -- topk, sort --------------------------------------------------------------------------------


def _topk(g, x: str, k: str, axis: int, largest: bool, outputs) -> tuple[str, str]:
    """TopK, sorted; ties keep the lower index first (onnxruntime), NaN counts as largest."""
    names = [o or g.unique_name("topk_unused") for o in outputs]
    elem = g.get_type(x)
    wide = _TOPK_WIDE.get(elem)
    if wide is None:
        g.op.TopK(x, k, axis=axis, largest=int(largest), sorted=1, outputs=names)
        return tuple(names)
    values, indices = g.op.TopK(
        g.op.Cast(x, to=wide),
        k,
        axis=axis,
        largest=int(largest),
        sorted=1,
        outputs=[g.unique_name("topk_wide"), names[1]],
    )
    g.op.Cast(values, to=elem, outputs=[names[0]])
    return tuple(names)


def _whole_axis(g, x: str, dim: int) -> tuple[int, str]:
    rank = _require_rank(g, x, "sort")
    axis = dim % rank
    return axis, g.op.Shape(x, start=axis, end=axis + 1)


# aten::topk.default
def aten_topk(g, sts, outputs, self, k, dim=-1, largest=True, sorted=True):
    "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)"
    rank = _require_rank(g, self, "topk")
    # sorted=False leaves the order to the implementation: sorted is one valid order
    count = _ints([k]) if type(k) is int else g.op.Reshape(k, _ints([1]))
    return _topk(g, self, count, dim % rank, largest, outputs)


# aten::sort.default
def aten_sort(g, sts, outputs, self, dim=-1, descending=False):
    "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)"
    axis, count = _whole_axis(g, self, dim)
    return _topk(g, self, count, axis, descending, outputs)


# aten::sort.stable
def aten_sort_stable(g, sts, outputs, self, *, stable, dim=-1, descending=False):
    "sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)"
    return aten_sort(g, sts, outputs, self, dim, descending)


# aten::argsort.default
def aten_argsort(g, sts, outputs, self, dim=-1, descending=False):
    "argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor"
    axis, count = _whole_axis(g, self, dim)
    return _topk(g, self, count, axis, descending, ["", outputs[0]])[1]


# aten::argsort.stable
def aten_argsort_stable(g, sts, outputs, self, *, stable, dim=-1, descending=False):
    "argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor"
    return aten_argsort(g, sts, outputs, self, dim, descending)


# -- embedding_bag ------------------------------------------------------------------------------

_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def _i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _bag_of_each_index(g, indices: str, offsets: str) -> str:
    """The bag each position of ``indices`` falls in: the number of offsets <= it, minus 1."""
    length = g.op.Squeeze(g.op.Shape(indices), _i64(0))
    positions = g.op.Range(np.array(0, dtype=np.int64), length, np.array(1, dtype=np.int64))
    starts = g.op.Unsqueeze(cast(g, offsets, TensorProto.INT64), _i64(0))
    started = g.op.GreaterOrEqual(g.op.Unsqueeze(positions, _i64(1)), starts)
    count = g.op.ReduceSum(cast(g, started, TensorProto.INT64), _i64(1), keepdims=0)
    return g.op.Sub(count, np.array(1, dtype=np.int64))


def _bag_totals(g, bags: str, updates: str, n_bags: str, fill, elem: int, reduction: str) -> str:
    """Scatter-reduces ``updates`` (one row per index) into ``n_bags + 1`` rows, from ``fill``.

    The extra last row keeps the scatter in range for empty offsets; the caller drops it.
    """
    shape = g.op.Concat(g.op.Add(n_bags, _i64(1)), g.op.Shape(updates, start=1), axis=0)
    start = g.op.Expand(operand(g, fill, elem), shape)
    # float16/bfloat16 sums run in float32, as torch accumulates them (and onnxruntime lacks them)
    return _scatter(g, "ScatterND", start, g.op.Unsqueeze(bags, _i64(1)), updates, reduction, 1)


def _unused_bag_outputs(g, outputs) -> list[str]:
    return [unused_output(g, TensorProto.INT64) if name else "" for name in outputs[1:]]


def _bag_result(g, outputs, x: str, n_bags: str) -> tuple:
    first = g.op.Slice(x, _i64(0), n_bags, _i64(0), outputs=outputs[:1])
    return first, *_unused_bag_outputs(g, outputs)


def _bag_counts(g, bags: str, rows: str, keep, n_bags: str, elem: int) -> str:
    """Number of (non-padding) indices per bag, in ``elem``, shaped like ``rows``' rows."""
    ones = g.op.Expand(operand(g, 1, elem), g.op.Shape(rows))
    ones = ones if keep is None else g.op.Where(keep, ones, operand(g, 0, elem))
    return _bag_totals(g, bags, ones, n_bags, 0, elem, "add")


def _bag_max(g, bags: str, rows: str, keep, n_bags: str, elem: int) -> str:
    """Per-bag maximum; an empty bag (or one of padding only) is 0, as torch."""
    if keep is not None:
        rows = g.op.Where(keep, rows, operand(g, -np.inf, elem))
    best = _bag_totals(g, bags, rows, n_bags, -np.inf, elem, "max")
    counts = _bag_counts(g, bags, rows, keep, n_bags, elem)
    return g.op.Where(g.op.Greater(counts, operand(g, 0, elem)), best, operand(g, 0, elem))


# aten::_embedding_bag.default
def aten__embedding_bag(
    g, sts, outputs, weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
    per_sample_weights=None, include_last_offset=False, padding_idx=-1,
):
    "_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)"
    if any(output_used(sts, outputs, i) for i in (1, 2, 3)):
        raise UnsupportedError("_embedding_bag offset2bag/bag_size/max_indices: kernel-specific")
    if mode not in _BAG_MODES:
        raise UnsupportedError(f"_embedding_bag mode={mode}")
    if g.get_rank(indices) != 1:
        raise UnsupportedError(f"_embedding_bag of {g.get_rank(indices)}-d indices")
    elem = sts.dtypes[0]
    n_bags = g.op.Shape(offsets)
    bags = _bag_of_each_index(g, indices, offsets)
    if include_last_offset:
        # torch's CPU kernel ends the last bag at the end of ``indices``, whatever offsets[-1]
        n_bags = g.op.Sub(n_bags, _i64(1))
        bags = g.op.Min(bags, g.op.Squeeze(g.op.Sub(n_bags, _i64(1)), _i64(0)))
    rows = g.op.Gather(weight, indices, axis=0)
    keep = None
    if padding_idx is not None and padding_idx >= 0:
        pad = operand(g, padding_idx, g.get_type(indices))
        keep = g.op.Unsqueeze(g.op.Not(g.op.Equal(indices, pad)), _i64(1))
    if per_sample_weights is not None:
        rows = g.op.Mul(rows, g.op.Unsqueeze(cast(g, per_sample_weights, elem), _i64(1)))
    if _BAG_MODES[mode] == "max":
        return _bag_result(g, outputs, _bag_max(g, bags, rows, keep, n_bags, elem), n_bags)
    if keep is not None:
        rows = g.op.Where(keep, rows, operand(g, 0, elem))
    totals = _bag_totals(g, bags, rows, n_bags, 0, elem, "add")
    if _BAG_MODES[mode] == "sum":
        return _bag_result(g, outputs, totals, n_bags)
    counts = _bag_counts(g, bags, rows, keep, n_bags, elem)
    mean = g.op.Div(totals, g.op.Max(counts, operand(g, 1, elem)))
    return _bag_result(g, outputs, mean, n_bags)


CONVERTERS = (
    Converter("aten::index.Tensor", aten_index),
    Converter("aten::_unsafe_index.Tensor", aten_index),
    Converter("aten::index_put.default", aten_index_put),
    Converter("aten::index_put_.default", aten_index_put),
    Converter("aten::_unsafe_index_put.default", aten_index_put),
    Converter("aten::index_select.default", aten_index_select),
    Converter("aten::gather.default", aten_gather),
    Converter("aten::take.default", aten_take),
    Converter("aten::embedding.default", aten_embedding),
    Converter("aten::scatter.src", aten_scatter_src),
    Converter("aten::scatter_.src", aten_scatter_src),
    Converter("aten::scatter.value", aten_scatter_value),
    Converter("aten::scatter_.value", aten_scatter_value),
    Converter("aten::scatter.reduce", aten_scatter_reduce),
    Converter("aten::scatter_.reduce", aten_scatter_reduce),
    Converter("aten::scatter.value_reduce", aten_scatter_value_reduce),
    Converter("aten::scatter_.value_reduce", aten_scatter_value_reduce),
    Converter("aten::scatter_add.default", aten_scatter_add),
    Converter("aten::scatter_add_.default", aten_scatter_add),
    Converter("aten::scatter_reduce.two", aten_scatter_reduce_two),
    Converter("aten::scatter_reduce_.two", aten_scatter_reduce_two),
    Converter("aten::index_copy.default", aten_index_copy),
    Converter("aten::index_copy_.default", aten_index_copy),
    Converter("aten::index_add.default", aten_index_add),
    Converter("aten::index_add_.default", aten_index_add),
    Converter("aten::index_fill.int_Scalar", aten_index_fill),
    Converter("aten::index_fill.int_Tensor", aten_index_fill),
    Converter("aten::index_fill_.int_Scalar", aten_index_fill),
    Converter("aten::index_fill_.int_Tensor", aten_index_fill),
    Converter("aten::slice_scatter.default", aten_slice_scatter),
    Converter("aten::select_scatter.default", aten_select_scatter),
    Converter("aten::masked_fill.Scalar", aten_masked_fill),
    Converter("aten::masked_fill.Tensor", aten_masked_fill),
    Converter("aten::masked_fill_.Scalar", aten_masked_fill),
    Converter("aten::masked_fill_.Tensor", aten_masked_fill),
    Converter("aten::masked_scatter.default", aten_masked_scatter),
    Converter("aten::masked_scatter_.default", aten_masked_scatter),
    Converter("aten::nonzero.default", aten_nonzero),
    Converter("aten::topk.default", aten_topk),
    Converter("aten::sort.default", aten_sort),
    Converter("aten::sort.stable", aten_sort_stable),
    Converter("aten::argsort.default", aten_argsort),
    Converter("aten::argsort.stable", aten_argsort_stable),
    Converter("aten::_embedding_bag.default", aten__embedding_bag),
    Converter("aten::embedding_bag.default", aten__embedding_bag),
    Converter("aten::embedding_bag.padding_idx", aten__embedding_bag),
)
