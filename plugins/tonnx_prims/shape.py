"""Layout prims: broadcast_in_dim, collapse, split_dim, squeeze, transpose, reshape, cat,
rev, as_strided and the views that are no-ops in ONNX (view_of, clone).

ONNX tensors have no strides, so a view is its values. Sizes that are symbolic stay
symbolic: the target shape of a Reshape is built from the input's runtime shape
(``Shape`` slices) wherever a dim is not a static int. ``as_strided`` reads the input's
storage, which ONNX does not have: it is converted when every size is static and the input's
values fill its storage span (a contiguous or permuted tensor, as torch's ``_refs`` make
them), by gathering from the values laid out in storage order.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import shape_tensor

INT64 = TensorProto.INT64


def _dim(g, x: str, i: int):
    """Size ``i`` of ``x``: an int when static, else a 1-D int64 ``Shape`` slice."""
    size = g.get_shape(x)[i]
    if type(size) is int:
        return size
    return g.op.Shape(x, start=i, end=i + 1)


def _product(g, sizes: list):
    """The product of ints and 1-D int64 sizes: an int when all are static."""
    static = math.prod(s for s in sizes if type(s) is int)
    dynamic = [s for s in sizes if type(s) is not int]
    if not dynamic:
        return static
    result = dynamic[0]
    for s in dynamic[1:]:
        result = g.op.Mul(result, s)
    return result if static == 1 else g.op.Mul(result, np.array([static], dtype=np.int64))


def _reshape(g, x: str, dims: list, outputs) -> str:
    # allowzero: a static 0 in the target is a size, not "copy the input's dim"
    return g.op.Reshape(x, shape_tensor(g, dims), allowzero=1, outputs=outputs)


# prims::broadcast_in_dim.default
def prims_broadcast_in_dim(g, sts, outputs, a, shape, broadcast_dimensions):
    "broadcast_in_dim(Tensor(a) a, SymInt[] shape, int[] broadcast_dimensions) -> Tensor(a)"
    new_axes = [i for i in range(len(shape)) if i not in set(broadcast_dimensions)]
    unsqueezed = list(g.get_shape(a))
    for axis in new_axes:
        unsqueezed.insert(axis, 1)
    if unsqueezed == list(shape) and all(type(d) is int for d in shape):
        # nothing to expand (no Expand node: onnxruntime's ExpandElimination mishandles
        # some of them)
        if not new_axes:
            return a
        return g.op.Unsqueeze(a, np.array(new_axes, dtype=np.int64), outputs=outputs)
    x = g.op.Unsqueeze(a, np.array(new_axes, dtype=np.int64)) if new_axes else a
    return g.op.Expand(x, shape_tensor(g, list(shape)), outputs=outputs)


def _collapse(g, a: str, start: int, end: int, outputs) -> str:
    """Dims ``start`` to ``end`` (included, as in torch._prims) merged into one."""
    dims = [_dim(g, a, i) for i in range(g.get_rank(a))]
    merged = _product(g, dims[start : end + 1])
    return _reshape(g, a, [*dims[:start], merged, *dims[end + 1 :]], outputs)


# prims::collapse_view.default
def prims_collapse_view(g, sts, outputs, a, start, end):
    "collapse_view(Tensor(a) a, int start, int end) -> Tensor(a)"
    return _collapse(g, a, start, end, outputs)


# prims::collapse.default
def prims_collapse(g, sts, outputs, a, start, end):
    "collapse(Tensor a, int start, int end) -> Tensor"
    return _collapse(g, a, start, end, outputs)


# prims::split_dim.default
def prims_split_dim(g, sts, outputs, a, dim, outer_length):
    "split_dim(Tensor(a) a, int dim, SymInt outer_length) -> Tensor(a)"
    rank = g.get_rank(a)
    dim %= rank
    dims = [_dim(g, a, i) for i in range(rank)]
    size = dims[dim]
    if type(size) is int and type(outer_length) is int:
        inner = size // outer_length
    else:
        inner = g.op.Div(_as_int64(g, size), _as_int64(g, outer_length))
    return _reshape(g, a, [*dims[:dim], outer_length, inner, *dims[dim + 1 :]], outputs)


def _as_int64(g, size):
    if type(size) is int:
        return np.array(size, dtype=np.int64)
    return size if g.get_type(size) == INT64 else g.op.Cast(size, to=INT64)


# prims::squeeze.default
def prims_squeeze(g, sts, outputs, a, dimensions):
    "squeeze(Tensor(a) a, int[] dimensions) -> Tensor(a)"
    if not dimensions:
        return a
    rank = g.get_rank(a)
    axes = sorted(d % rank for d in dimensions)
    return g.op.Squeeze(a, np.array(axes, dtype=np.int64), outputs=outputs)


# prims::transpose.default
def prims_transpose(g, sts, outputs, a, permutation):
    "transpose(Tensor(a) a, int[] permutation) -> Tensor(a)"
    perm = [p % max(len(permutation), 1) for p in permutation]
    if perm == sorted(perm):
        return a
    return g.op.Transpose(a, perm=perm, outputs=outputs)


# prims::reshape.default
def prims_reshape(g, sts, outputs, a, shape):
    "reshape(Tensor a, SymInt[] shape) -> Tensor"
    return _reshape(g, a, list(shape), outputs)


# prims::view_of.default
def prims_view_of(g, sts, outputs, a):
    "view_of(Tensor(a) a) -> Tensor(a)"
    return a


# prims::clone.default
def prims_clone(g, sts, outputs, self, memory_format=None):
    "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor"
    return self


# prims::cat.default
def prims_cat(g, sts, outputs, tensors, dim):
    "cat(Tensor[] tensors, int dim) -> Tensor"
    if len(tensors) == 1:
        return tensors[0]
    return g.op.Concat(*tensors, axis=dim % len(sts.shape), outputs=outputs)


# prims::rev.default
def prims_rev(g, sts, outputs, a, dims):
    "rev(Tensor a, int[] dims) -> Tensor"
    if not dims:
        return a
    rank = g.get_rank(a)
    axes = np.array(sorted(d % rank for d in dims), dtype=np.int64)
    starts = np.full(len(axes), -1, dtype=np.int64)
    ends = np.full(len(axes), np.iinfo(np.int64).min, dtype=np.int64)
    steps = np.full(len(axes), -1, dtype=np.int64)
    return g.op.Slice(a, starts, ends, axes, steps, outputs=outputs)


# prims::as_strided.default
def prims_as_strided(g, sts, outputs, a, size, stride, storage_offset):
    "as_strided(Tensor(a!) a, SymInt[] size, SymInt[] stride, SymInt storage_offset) -> Tensor(a!)"
    meta = sts.input_values[0]
    shape, strides, base = list(meta.shape), list(meta.stride()), meta.storage_offset()
    static = all(type(v) is int for v in (*size, *stride, storage_offset, *shape, *strides, base))
    if static and list(size) == shape and list(stride) == strides and storage_offset == base:
        return a  # the input itself
    if not static or not _dense(shape, strides):
        raise UnsupportedError(
            "prims.as_strided is converted for static sizes and an input whose values fill "
            f"its storage span (got sizes {list(size)}, strides {list(stride)}, offset "
            f"{storage_offset}, input sizes {shape}, strides {strides})."
        )
    index = np.full(tuple(size), storage_offset - base, dtype=np.int64)
    for axis, (n, step) in enumerate(zip(size, stride)):
        axis_shape = [1] * len(size)
        axis_shape[axis] = n
        index = index + (np.arange(n, dtype=np.int64) * step).reshape(axis_shape)
    numel = math.prod(shape)
    if index.size and (index.min() < 0 or index.max() >= numel):
        raise UnsupportedError(
            f"prims.as_strided reads storage outside the input's {numel} values, which "
            "ONNX does not have."
        )
    return g.op.Gather(_storage_order(g, a, strides), index, axis=0, outputs=outputs)


def _dense(shape: list[int], strides: list[int]) -> bool:
    """True when the values occupy storage ``[offset, offset + numel)`` exactly."""
    expected = 1
    for n, s in sorted(((n, s) for n, s in zip(shape, strides) if n != 1), key=lambda d: d[1]):
        if s != expected:
            return False
        expected *= n
    return True


def _storage_order(g, a: str, strides: list[int]) -> str:
    """``a``'s values flattened in storage order (dims by decreasing stride)."""
    perm = sorted(range(len(strides)), key=lambda d: -strides[d])
    if perm != sorted(perm):
        a = g.op.Transpose(a, perm=perm)
    return g.op.Reshape(a, np.array([-1], dtype=np.int64))


CONVERTERS = (
    Converter("prims::broadcast_in_dim.default", prims_broadcast_in_dim),
    Converter("prims::collapse_view.default", prims_collapse_view),
    Converter("prims::collapse.default", prims_collapse),
    Converter("prims::split_dim.default", prims_split_dim),
    Converter("prims::squeeze.default", prims_squeeze),
    Converter("prims::transpose.default", prims_transpose),
    Converter("prims::reshape.default", prims_reshape),
    Converter("prims::view_of.default", prims_view_of),
    Converter("prims::clone.default", prims_clone),
    Converter("prims::cat.default", prims_cat),
    Converter("prims::rev.default", prims_rev),
    Converter("prims::as_strided.default", prims_as_strided),
)
