"""Shape and view ops: view, reshape, permute, expand, cat, split, slice, pad, copies.

Sizes are handled as *entries*: a python int for a static size, or the name of a 1-D
int64 tensor of one element (a ``Shape`` slice or a computed size) for a dynamic one;
``tonnx.converters.shape_tensor`` turns a list of entries (or SymInt arguments, 0-d int64
results) into one shape tensor.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, named, operand, shape_tensor

_INT64_MAX = int(np.iinfo(np.int64).max)
_INT64_MIN = int(np.iinfo(np.int64).min)


def _i64(values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# -- sizes as entries ----------------------------------------------------------------------


def _dim(g, x: str, axis: int):
    """Size of ``x`` along ``axis`` (normalized): an int, or a 1-D [1] int64 tensor."""
    d = g.get_shape(x)[axis]
    return d if type(d) is int else g.op.Shape(x, start=axis, end=axis + 1)


def _scalar_entry(g, value):
    """A SymInt argument (int or 0-d int64 name) as an entry."""
    return value if type(value) is int else g.op.Unsqueeze(cast(g, value, TensorProto.INT64), _i64([0]))


def _mul(g, a, k):
    if type(a) is int and type(k) is int:
        return a * k
    return g.op.Mul(shape_tensor(g, [a]), shape_tensor(g, [k]))


def _div(g, a, k: int):
    """Exact quotient of a size by k (torch checked divisibility)."""
    return a // k if type(a) is int else g.op.Div(a, _i64([k]))


def _sub(g, a, b):
    if type(a) is int and type(b) is int:
        return a - b
    return g.op.Sub(shape_tensor(g, [a]), shape_tensor(g, [b]))


# -- reshapes --------------------------------------------------------------------------------


def _copy_pattern(g, x: str, out_shape) -> list[int] | None:
    """A constant Reshape target with 0 (copy the input dim) and at most one -1, if exact.

    0 copies the input's dimension at the same position: used where torch's output has the
    same symbolic size there. A literal 0 size rules the pattern out (0 would mean copy).
    """
    in_shape = g.get_shape(x)
    pattern, unknown = [], 0
    for i, d in enumerate(out_shape):
        if type(d) is int:
            if d == 0:
                return None
            pattern.append(d)
        elif i < len(in_shape) and in_shape[i] == d:
            pattern.append(0)
        else:
            pattern.append(-1)
            unknown += 1
    return pattern if unknown <= 1 else None


def _meta_shape(g, x: str, out_shape) -> str | None:
    """Torch's output shape from the input's own dims (and one -1), or None if not exact."""
    in_shape = g.get_shape(x)
    entries, unknown = [], 0
    for d in out_shape:
        if type(d) is int:
            entries.append(d)
        elif d in in_shape:
            entries.append(_dim(g, x, in_shape.index(d)))
        else:
            entries.append(-1)
            unknown += 1
    if unknown > 1 or (unknown and 0 in out_shape):
        return None
    return shape_tensor(g, entries)


def _reshape(g, x: str, out_shape, fallback) -> str:
    """Reshape ``x`` to torch's ``out_shape``; ``fallback()`` builds the shape otherwise."""
    if all(type(d) is int for d in out_shape):
        if tuple(out_shape) == g.get_shape(x):
            return x
        return g.op.Reshape(x, _i64(list(out_shape)), allowzero=int(0 in out_shape))
    pattern = _copy_pattern(g, x, out_shape)
    if pattern is not None:
        return g.op.Reshape(x, _i64(pattern))
    shape = _meta_shape(g, x, out_shape)
    return g.op.Reshape(x, shape if shape is not None else fallback(), allowzero=1)


# aten::view.default, aten::_unsafe_view.default, aten::view_copy.default
def aten_view(g, sts, outputs, self, size):
    "view(Tensor(a) self, SymInt[] size) -> Tensor(a)"
    return named(g, _reshape(g, self, sts.shape, lambda: shape_tensor(g, size)), outputs[0])


# aten::reshape.default
def aten_reshape(g, sts, outputs, self, shape):
    "reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)"
    return named(g, _reshape(g, self, sts.shape, lambda: shape_tensor(g, shape)), outputs[0])


# aten::_reshape_alias.default
def aten__reshape_alias(g, sts, outputs, self, size, stride):
    "_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)"
    return named(g, _reshape(g, self, sts.shape, lambda: shape_tensor(g, size)), outputs[0])


# aten::view_as.default, aten::reshape_as.default
def aten_view_as(g, sts, outputs, self, other):
    "view_as(Tensor(a) self, Tensor other) -> Tensor(a)"
    return named(g, _reshape(g, self, sts.shape, lambda: g.op.Shape(other)), outputs[0])


# aten::flatten.using_ints
def aten_flatten(g, sts, outputs, self, start_dim=0, end_dim=-1):
    "flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)"
    rank = max(g.get_rank(self), 1)
    start, end = start_dim % rank, end_dim % rank

    def fallback():
        merged = g.op.ReduceProd(g.op.Shape(self, start=start, end=end + 1), keepdims=1)
        return named(g, g.op.Concat(g.op.Shape(self, end=start), merged, g.op.Shape(self, start=end + 1), axis=0), outputs[0])

    return named(g, _reshape(g, self, sts.shape, fallback), outputs[0])


# aten::ravel.default
def aten_ravel(g, sts, outputs, self):
    "ravel(Tensor(a) self) -> Tensor(a)"
    return named(g, _reshape(g, self, sts.shape, lambda: _i64([-1])), outputs[0])


# aten::unflatten.int
def aten_unflatten(g, sts, outputs, self, dim, sizes):
    "unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)"
    axis = dim % g.get_rank(self)

    def fallback():
        middle = shape_tensor(g, sizes)
        return named(g, g.op.Concat(g.op.Shape(self, end=axis), middle, g.op.Shape(self, start=axis + 1), axis=0), outputs[0])

    return named(g, _reshape(g, self, sts.shape, fallback), outputs[0])


# aten::expand.default, aten::expand_copy.default
def aten_expand(g, sts, outputs, self, size, implicit=False):
    "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)"
    in_shape = g.get_shape(self)
    lead = len(size) - len(in_shape)
    # Expand broadcasts: 1 keeps the input's size, so only real expansions are spelled out
    target = []
    for i, (s, d) in enumerate(zip(size, sts.shape)):
        keep = i >= lead and (s == -1 or in_shape[i - lead] == d)
        target.append(1 if keep else (d if type(d) is int else s))
    if lead == 0 and all(t == 1 for t in target):
        return named(g, self, outputs[0])
    return named(g, g.op.Expand(self, shape_tensor(g, target)), outputs[0])


# aten::expand_as.default
def aten_expand_as(g, sts, outputs, self, other):
    "expand_as(Tensor(a) self, Tensor other) -> Tensor(a)"
    if g.get_shape(self) == g.get_shape(other):
        return named(g, self, outputs[0])
    return named(g, g.op.Expand(self, g.op.Shape(other)), outputs[0])


# -- permutations ----------------------------------------------------------------------------


def _transpose(g, x: str, perm: list[int]) -> str:
    if perm == sorted(perm):
        return x
    return g.op.Transpose(x, perm=perm)


# aten::permute.default, aten::permute_copy.default
def aten_permute(g, sts, outputs, self, dims):
    "permute(Tensor(a) self, int[] dims) -> Tensor(a)"
    rank = g.get_rank(self)
    return named(g, _transpose(g, self, [d % rank for d in dims]), outputs[0])


# aten::transpose.int, aten::transpose_.default, aten::transpose_copy.int, aten::swapdims.default
def aten_transpose(g, sts, outputs, self, dim0, dim1):
    "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"
    rank = g.get_rank(self)
    if rank < 2:
        return named(g, self, outputs[0])
    perm = list(range(rank))
    a, b = dim0 % rank, dim1 % rank
    perm[a], perm[b] = perm[b], perm[a]
    return named(g, _transpose(g, self, perm), outputs[0])


# aten::swapaxes.default
def aten_swapaxes(g, sts, outputs, self, axis0, axis1):
    "swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)"
    return aten_transpose(g, sts, outputs, self, axis0, axis1)


# aten::mT.default
def aten_mt(g, sts, outputs, self):
    "mT(Tensor(a) self) -> Tensor(a)"
    return aten_transpose(g, sts, outputs, self, -2, -1)


def _movedim_perm(rank: int, source: list[int], destination: list[int]) -> list[int]:
    src = [s % rank for s in source]
    perm = [-1] * rank
    for s, d in zip(src, destination):
        perm[d % rank] = s
    rest = iter(i for i in range(rank) if i not in src)
    return [p if p >= 0 else next(rest) for p in perm]


# aten::movedim.int, aten::moveaxis.int
def aten_movedim_int(g, sts, outputs, self, source, destination):
    "movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)"
    return aten_movedim_intlist(g, sts, outputs, self, [source], [destination])


# aten::movedim.intlist
def aten_movedim_intlist(g, sts, outputs, self, source, destination):
    "movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)"
    rank = g.get_rank(self)
    return named(g, _transpose(g, self, _movedim_perm(rank, source, destination)) if rank > 1 else self, outputs[0])


# -- squeeze, unsqueeze ----------------------------------------------------------------------


def _squeeze(g, sts, x: str, dims) -> str:
    """Squeezes the dims of ``dims`` (all if None) whose size is 1, as torch's meta did."""
    in_shape = g.get_shape(x)
    candidates = range(len(in_shape)) if dims is None else sorted({d % max(len(in_shape), 1) for d in dims})
    axes = [a for a in candidates if a < len(in_shape) and in_shape[a] == 1]
    if len(in_shape) - len(axes) != len(sts.shape):
        raise UnsupportedError(
            f"squeeze of {in_shape} over {dims}: torch squeezed a dimension whose size is "
            f"symbolic, which cannot be told apart statically."
        )
    return g.op.Squeeze(x, _i64(axes)) if axes else x


# aten::squeeze.default, aten::squeeze_.default, aten::squeeze_copy.default
def aten_squeeze(g, sts, outputs, self):
    "squeeze(Tensor(a) self) -> Tensor(a)"
    return named(g, _squeeze(g, sts, self, None), outputs[0])


# aten::squeeze.dim, aten::squeeze_.dim, aten::squeeze_copy.dim
def aten_squeeze_dim(g, sts, outputs, self, dim):
    "squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)"
    return named(g, _squeeze(g, sts, self, [dim]), outputs[0])


# aten::squeeze.dims, aten::squeeze_.dims, aten::squeeze_copy.dims
def aten_squeeze_dims(g, sts, outputs, self, dim):
    "squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)"
    return named(g, _squeeze(g, sts, self, dim), outputs[0])


# aten::unsqueeze.default, aten::unsqueeze_.default, aten::unsqueeze_copy.default
def aten_unsqueeze(g, sts, outputs, self, dim):
    "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"
    return named(g, g.op.Unsqueeze(self, _i64([dim % (g.get_rank(self) + 1)])), outputs[0])


# -- no-ops ----------------------------------------------------------------------------------


# aten::clone.default
def aten_clone(g, sts, outputs, self, memory_format=None):
    "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor"
    return named(g, self, outputs[0])


# aten::contiguous.default
def aten_contiguous(g, sts, outputs, self, memory_format=0):
    "contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)"
    return named(g, self, outputs[0])


# aten::alias.default, aten::alias_copy.default, aten::detach.default,
# aten::detach_.default, aten::lift_fresh_copy.default
def aten_alias(g, sts, outputs, self):
    "alias(Tensor(a) self) -> Tensor(a)"
    return named(g, self, outputs[0])


# -- concatenation and splits ----------------------------------------------------------------


def _concat(g, elem: int, items, dim: int) -> str:
    """cat of (name, shape) items in ``elem``; 1-D empty tensors are skipped, as torch does."""
    kept = [(name, shape) for name, shape in items if tuple(shape) != (0,)]
    if not kept:
        return cast(g, items[0][0], elem)
    names = [cast(g, name, elem) for name, _ in kept]
    if len(names) == 1:
        return names[0]
    return g.op.Concat(*names, axis=dim % len(kept[0][1]))


# aten::cat.default, aten::concat.default, aten::concatenate.default
def aten_cat(g, sts, outputs, tensors, dim=0):
    "cat(Tensor[] tensors, int dim=0) -> Tensor"
    return named(g, _concat(g, sts.dtype, [(t, g.get_shape(t)) for t in tensors], dim), outputs[0])


def _at_least(g, x: str, rank: int) -> tuple[str, tuple]:
    """(x, shape) with leading 1s up to ``rank`` (atleast_1d/atleast_2d); 1-D goes to (1, n)."""
    shape = g.get_shape(x)
    missing = rank - len(shape)
    if missing <= 0:
        return x, shape
    return g.op.Unsqueeze(x, _i64(list(range(missing)))), (1,) * missing + tuple(shape)


# aten::hstack.default
def aten_hstack(g, sts, outputs, tensors):
    "hstack(Tensor[] tensors) -> Tensor"
    items = [_at_least(g, t, 1) for t in tensors]
    return named(g, _concat(g, sts.dtype, items, 0 if len(items[0][1]) == 1 else 1), outputs[0])


# aten::vstack.default
def aten_vstack(g, sts, outputs, tensors):
    "vstack(Tensor[] tensors) -> Tensor"
    return named(g, _concat(g, sts.dtype, [_at_least(g, t, 2) for t in tensors], 0), outputs[0])


# aten::stack.default
def aten_stack(g, sts, outputs, tensors, dim=0):
    "stack(Tensor[] tensors, int dim=0) -> Tensor"
    axis = _i64([dim % (g.get_rank(tensors[0]) + 1)])
    names = [g.op.Unsqueeze(cast(g, t, sts.dtype), axis) for t in tensors]
    return named(g, names[0] if len(names) == 1 else g.op.Concat(*names, axis=int(axis[0])), outputs[0])


def _split(g, outputs, x: str, sizes, axis: int) -> tuple:
    """Split ``x`` along ``axis`` into pieces of ``sizes`` (entries), one per output."""
    if len(outputs) == 1:
        return (x,)
    names = [o or g.unique_name(f"{x}_split") for o in outputs]
    pieces = g.make_node("Split", [x, shape_tensor(g, sizes)], names, axis=axis)
    return pieces if type(pieces) is tuple else (pieces,)


def _recorded_sizes(sts, axis: int) -> list | None:
    """The sizes of the pieces along ``axis`` torch's meta recorded, when all are static."""
    sizes = [shape[axis] for shape in sts.shapes]
    return sizes if all(type(s) is int for s in sizes) else None


def _even_split(g, sts, outputs, self: str, piece, dim: int) -> tuple:
    """Pieces of size ``piece`` (entry) but the last, which takes the rest."""
    axis = dim % g.get_rank(self)
    sizes = _recorded_sizes(sts, axis)
    if sizes is None:
        n = len(outputs)
        last = _sub(g, _dim(g, self, axis), _mul(g, piece, n - 1))
        sizes = [piece] * (n - 1) + [last]
    return _split(g, outputs, self, sizes, axis)


# aten::split.Tensor, aten::split_copy.Tensor
def aten_split(g, sts, outputs, self, split_size, dim=0):
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"
    return _even_split(g, sts, outputs, self, _scalar_entry(g, split_size), dim)


# aten::chunk.default
def aten_chunk(g, sts, outputs, self, chunks, dim=0):
    "chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"
    axis = dim % g.get_rank(self)
    size = _dim(g, self, axis)
    # ceil(size / chunks), as torch computes the chunk size
    piece = -(-size // chunks) if type(size) is int else g.op.Div(g.op.Add(size, _i64([chunks - 1])), _i64([chunks]))
    return _even_split(g, sts, outputs, self, piece, dim)


# aten::split_with_sizes.default, aten::split_with_sizes_copy.default
def aten_split_with_sizes(g, sts, outputs, self, split_sizes, dim=0):
    "split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]"
    sizes = [_scalar_entry(g, s) for s in split_sizes]
    return _split(g, outputs, self, sizes, dim % g.get_rank(self))


# aten::split.sizes
def aten_split_sizes(g, sts, outputs, self, split_size, dim=0):
    "split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]"
    return aten_split_with_sizes(g, sts, outputs, self, split_size, dim)


def _tensor_split(g, sts, outputs, self: str, dim: int) -> tuple:
    axis = dim % g.get_rank(self)
    sizes = _recorded_sizes(sts, axis)
    if sizes is None:
        raise UnsupportedError("tensor_split along a dimension of dynamic size is not supported.")
    return _split(g, outputs, self, sizes, axis)


# aten::tensor_split.sections
def aten_tensor_split_sections(g, sts, outputs, self, sections, dim=0):
    "tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]"
    return _tensor_split(g, sts, outputs, self, dim)


# aten::tensor_split.indices
def aten_tensor_split_indices(g, sts, outputs, self, indices, dim=0):
    "tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]"
    return _tensor_split(g, sts, outputs, self, dim)


# aten::unbind.int, aten::unbind_copy.int
def aten_unbind(g, sts, outputs, self, dim=0):
    "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]"
    axis = _i64([dim % g.get_rank(self)])
    pieces = _split(g, [""] * len(outputs), self, [1] * len(outputs), int(axis[0]))
    return tuple(g.op.Squeeze(p, axis, outputs=[o]) if o else "" for p, o in zip(pieces, outputs))


# -- slicing ---------------------------------------------------------------------------------


def _bound(value, default: int):
    if value is None:
        return default
    if type(value) is int:
        return min(max(value, _INT64_MIN), _INT64_MAX)
    return value


# aten::slice.Tensor, aten::slice_copy.Tensor
def aten_slice(g, sts, outputs, self, dim=0, start=None, end=None, step=1):
    "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)"
    axis = dim % g.get_rank(self)
    start, end = _bound(start, 0), _bound(end, _INT64_MAX)
    size = g.get_shape(self)[axis]
    whole = end == _INT64_MAX or (type(size) is int and type(end) is int and end >= size)
    if start == 0 and step == 1 and whole:
        return named(g, self, outputs[0])
    return named(g, g.op.Slice(
        self, shape_tensor(g, [start]), shape_tensor(g, [end]), _i64([axis]), shape_tensor(g, [step])
    ), outputs[0])


# aten::select.int, aten::select_copy.int
def aten_select(g, sts, outputs, self, dim, index):
    "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"
    index = _i64(index) if type(index) is int else cast(g, index, TensorProto.INT64)
    return named(g, g.op.Gather(self, index, axis=dim % g.get_rank(self)), outputs[0])


def _narrow_start(g, self: str, axis: int, start):
    """``start`` wrapped like torch's (start + size when negative), as an entry."""
    if type(start) is int:
        if start >= 0:
            return start
        size = _dim(g, self, axis)
        return start + size if type(size) is int else g.op.Add(size, _i64([start]))
    start = _scalar_entry(g, start)
    size = g.op.Shape(self, start=axis, end=axis + 1)
    return g.op.Where(g.op.Less(start, _i64([0])), g.op.Add(start, size), start)


# aten::narrow.default, aten::narrow.Tensor
def aten_narrow(g, sts, outputs, self, dim, start, length):
    "narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)"
    axis = dim % g.get_rank(self)
    begin = _narrow_start(g, self, axis, start)
    length = _scalar_entry(g, length)
    if type(begin) is int and type(length) is int:
        end = begin + length
    else:
        end = g.op.Add(shape_tensor(g, [begin]), shape_tensor(g, [length]))
    return named(g, g.op.Slice(self, shape_tensor(g, [begin]), shape_tensor(g, [end]), _i64([axis])), outputs[0])


# aten::flip.default
def aten_flip(g, sts, outputs, self, dims):
    "flip(Tensor self, int[] dims) -> Tensor"
    rank = max(g.get_rank(self), 1)
    axes = sorted({d % rank for d in dims})
    if not axes or g.get_rank(self) == 0:
        return named(g, self, outputs[0])
    n = len(axes)
    return named(g, g.op.Slice(self, _i64([-1] * n), _i64([_INT64_MIN] * n), _i64(axes), _i64([-1] * n)), outputs[0])


def _roll(g, x: str, size, shift, axis: int) -> str:
    """Rolls ``x`` by ``shift`` along ``axis`` of size ``size`` (entry): two slices swapped."""
    if type(size) is int and type(shift) is int:
        if size == 0 or shift % size == 0:
            return x
        cut = _i64([size - shift % size])
    else:
        size = shape_tensor(g, [size])
        cut = g.op.Sub(size, g.op.Mod(shape_tensor(g, [_scalar_entry(g, shift)]), size, fmod=0))
    axes = _i64([axis])
    tail = g.op.Slice(x, cut, _i64([_INT64_MAX]), axes)
    head = g.op.Slice(x, _i64([0]), cut, axes)
    return g.op.Concat(tail, head, axis=axis)


# aten::roll.default
def aten_roll(g, sts, outputs, self, shifts, dims=()):
    "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor"
    if not dims:
        flat = g.op.Reshape(self, _i64([-1]))
        rolled = _roll(g, flat, _flat_size(g, self), shifts[0], 0)
        return named(g, g.op.Reshape(rolled, g.op.Shape(self)), outputs[0])
    x, rank = self, g.get_rank(self)
    for shift, dim in zip(shifts, dims):
        axis = dim % rank
        x = _roll(g, x, _dim(g, self, axis), shift, axis)
    return named(g, x, outputs[0])


def _flat_size(g, x: str):
    shape = g.get_shape(x)
    if all(type(d) is int for d in shape):
        return int(np.prod(shape, dtype=np.int64))
    return g.op.Unsqueeze(g.op.Size(x), _i64([0]))


# aten::repeat.default
def aten_repeat(g, sts, outputs, self, repeats):
    "repeat(Tensor self, SymInt[] repeats) -> Tensor"
    lead = len(repeats) - g.get_rank(self)
    x = g.op.Unsqueeze(self, _i64(list(range(lead)))) if lead > 0 else self
    if lead == 0 and all(type(r) is int and r == 1 for r in repeats):
        return named(g, x, outputs[0])
    return named(g, g.op.Tile(x, shape_tensor(g, list(repeats))), outputs[0])


# aten::tile.default
def aten_tile(g, sts, outputs, self, dims):
    "tile(Tensor self, SymInt[] dims) -> Tensor"
    missing = g.get_rank(self) - len(dims)
    return aten_repeat(g, sts, outputs, self, [1] * missing + list(dims))


# -- padding ---------------------------------------------------------------------------------

_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad_axes(rank: int, pad) -> list[int]:
    """Axes padded by torch's pad list: pairs from the last dimension backwards."""
    return [rank - 1 - i for i in range(len(pad) // 2)]


def _full_pads(rank: int, axes: list[int], begins: list, ends: list) -> list:
    """Pad's ``pads`` for every axis (zeros where torch pads nothing), emitted without the
    ``axes`` input: onnxruntime's transpose optimizer (1.31, 1.32) permutes ``pads`` as if
    it covered every axis and ignores ``axes``, so a Pad with ``axes`` after a Transpose
    fails in a Gather (fewer pads than twice the rank) or pads the wrong axes."""
    full_begins, full_ends = [0] * rank, [0] * rank
    for axis, b, e in zip(axes, begins, ends):
        full_begins[axis], full_ends[axis] = b, e
    return full_begins + full_ends


def _constant_pad(g, x: str, pad, value) -> str:
    elem = g.get_type(x)
    rank = g.get_rank(x)
    axes = _pad_axes(rank, pad)
    pads = shape_tensor(g, _full_pads(rank, axes, list(pad[0::2]), list(pad[1::2])))
    fill = operand(g, value, elem) if value else None
    return g.op.Pad(x, pads, fill, mode="constant")


def _crop(g, x: str, axes: list[int], begins: list[int], ends: list[int]) -> str:
    """Negative pads crop: torch crops first, then pads the cropped tensor."""
    starts = [max(-b, 0) for b in begins]
    stops = [e if e < 0 else _INT64_MAX for e in ends]
    if not any(starts) and all(s == _INT64_MAX for s in stops):
        return x
    return g.op.Slice(x, _i64(starts), _i64(stops), _i64(axes))


def _circular(g, x: str, axes: list[int], begins: list[int], ends: list[int]) -> str:
    """Circular padding by slices (Pad's mode "wrap" needs opset 19, and onnxruntime)."""
    for axis, b, e in zip(axes, begins, ends):
        parts = [x]
        if b:
            parts.insert(0, g.op.Slice(x, _i64([-b]), _i64([_INT64_MAX]), _i64([axis])))
        if e:
            parts.append(g.op.Slice(x, _i64([0]), _i64([e]), _i64([axis])))
        x = g.op.Concat(*parts, axis=axis) if len(parts) > 1 else x
    return x


def _refuse_cropped_away(g, x: str, axes: list[int], begins: list[int], ends: list[int], mode: str) -> None:
    """Negative pads that crop an axis to nothing: torch then pads from the clamped edge of
    the uncropped input, which crop-then-pad cannot express."""
    shape = g.get_shape(x) if g.has_shape(x) else None
    for axis, b, e in zip(axes, begins, ends):
        size = shape[axis] if shape is not None else None
        crop = max(-b, 0) + max(-e, 0)
        if crop and type(size) is int and crop >= size and (b > 0 or e > 0):
            raise UnsupportedError(
                f"{mode} padding {list(zip(begins, ends))} crops axis {axis} (size {size}) "
                f"to nothing before padding it"
            )


def _mode_pad(g, x: str, pad, mode: str) -> str:
    """reflect/replicate/circular padding; torch crops negative pads before padding."""
    if not all(type(p) is int for p in pad):
        raise UnsupportedError(f"{mode} padding with dynamic pads {pad} is not supported.")
    rank = g.get_rank(x)
    axes = _pad_axes(rank, pad)
    begins, ends = list(pad[0::2]), list(pad[1::2])
    _refuse_cropped_away(g, x, axes, begins, ends, mode)
    x = _crop(g, x, axes, begins, ends)
    begins, ends = [max(b, 0) for b in begins], [max(e, 0) for e in ends]
    if not any(begins) and not any(ends):
        return x
    if mode == "circular":  # onnxruntime 1.32 runs no Pad "wrap" ("Unexpected mode of 3")
        return _circular(g, x, axes, begins, ends)
    shape = g.get_shape(x) if g.has_shape(x) else None
    if shape is not None and 0 in shape:
        # an empty tensor pads to an empty tensor; onnxruntime refuses "edge" on it
        mode = "constant"
    return g.op.Pad(x, _i64(_full_pads(rank, axes, begins, ends)), mode=_MODES[mode])


# aten::constant_pad_nd.default
def aten_constant_pad_nd(g, sts, outputs, self, pad, value=0):
    "constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor"
    return named(g, _constant_pad(g, self, pad, value), outputs[0])


# aten::pad.default
def aten_pad(g, sts, outputs, self, pad, mode="constant", value=None):
    "pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor"
    if mode not in _MODES:
        raise UnsupportedError(f"pad mode {mode!r} is not supported (constant, reflect, replicate, circular).")
    if mode == "constant":
        return named(g, _constant_pad(g, self, pad, value or 0), outputs[0])
    return named(g, _mode_pad(g, self, pad, mode), outputs[0])


# aten::reflection_pad1d.default, aten::reflection_pad2d.default, aten::reflection_pad3d.default
def aten_reflection_pad(g, sts, outputs, self, padding):
    "reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor"
    return named(g, _mode_pad(g, self, padding, "reflect"), outputs[0])


# aten::replication_pad1d.default, aten::replication_pad2d.default, aten::replication_pad3d.default
def aten_replication_pad(g, sts, outputs, self, padding):
    "replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor"
    return named(g, _mode_pad(g, self, padding, "replicate"), outputs[0])


# -- pixel shuffles, diagonal, unfold, as_strided --------------------------------------------


def _dims(g, x: str) -> list:
    return [_dim(g, x, i) for i in range(g.get_rank(x))]


# aten::pixel_shuffle.default
def aten_pixel_shuffle(g, sts, outputs, self, upscale_factor):
    "pixel_shuffle(Tensor self, int upscale_factor) -> Tensor"
    r = upscale_factor
    rank = g.get_rank(self)
    floats = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)
    if rank == 4 and g.get_type(self) in floats:
        return named(g, g.op.DepthToSpace(self, blocksize=r, mode="CRD"), outputs[0])
    *batch, c, h, w = _dims(g, self)
    nb = len(batch)
    x = g.op.Reshape(self, shape_tensor(g, [*batch, _div(g, c, r * r), r, r, h, w]), allowzero=1)
    x = g.op.Transpose(x, perm=[*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2])
    shape = [*batch, _div(g, c, r * r), _mul(g, h, r), _mul(g, w, r)]
    return named(g, g.op.Reshape(x, shape_tensor(g, shape), allowzero=1), outputs[0])


# aten::pixel_unshuffle.default
def aten_pixel_unshuffle(g, sts, outputs, self, downscale_factor):
    "pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor"
    r = downscale_factor
    *batch, c, h, w = _dims(g, self)
    nb = len(batch)
    x = g.op.Reshape(self, shape_tensor(g, [*batch, c, _div(g, h, r), r, _div(g, w, r), r]), allowzero=1)
    x = g.op.Transpose(x, perm=[*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3])
    shape = [*batch, _mul(g, c, r * r), _div(g, h, r), _div(g, w, r)]
    return named(g, g.op.Reshape(x, shape_tensor(g, shape), allowzero=1), outputs[0])


def _diagonal_length(g, n, m, row: int, col: int):
    if type(n) is int and type(m) is int:
        return max(0, min(n - row, m - col))
    shorter = g.op.Min(shape_tensor(g, [_sub(g, n, row)]), shape_tensor(g, [_sub(g, m, col)]))
    return g.op.Max(shorter, _i64([0]))


# aten::diagonal.default, aten::diagonal_copy.default
def aten_diagonal(g, sts, outputs, self, offset=0, dim1=0, dim2=1):
    "diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)"
    rank = g.get_rank(self)
    d1, d2 = dim1 % rank, dim2 % rank
    others = [i for i in range(rank) if i not in (d1, d2)]
    x = _transpose(g, self, [*others, d1, d2])
    row, col = max(-offset, 0), max(offset, 0)
    length = _diagonal_length(g, _dim(g, self, d1), _dim(g, self, d2), row, col)
    # the L x L square holding the diagonal, flattened; its diagonal is every (L+1)-th item
    begin, end = shape_tensor(g, [row, col]), g.op.Add(_i64([row, col]), shape_tensor(g, [length]))
    square = g.op.Slice(x, begin, end, _i64([-2, -1]))
    area = _mul(g, length, length)
    flat = g.op.Reshape(square, shape_tensor(g, [*(_dim(g, self, i) for i in others), area]), allowzero=1)
    if type(length) is int:
        index = _i64(np.arange(length) * (length + 1))
    else:
        scalar = [g.op.Squeeze(v) for v in (area, g.op.Add(length, _i64([1])))]
        index = g.op.Range(_i64(0), scalar[0], scalar[1])
    return named(g, g.op.Gather(flat, index, axis=-1), outputs[0])


# aten::unfold.default
def aten_unfold(g, sts, outputs, self, dimension, size, step):
    "unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)"
    rank = g.get_rank(self)
    if rank == 0:  # torch: the element as a window of `size` (0 or 1) items
        return g.op.Slice(g.op.Reshape(self, _i64([1])), _i64([0]), _i64([size]), outputs=outputs)
    axis = dimension % rank
    total = _dim(g, self, axis)
    window = np.arange(size, dtype=np.int64)
    if type(total) is int:
        count = (total - size) // step + 1
        index = _i64(np.arange(count)[:, None] * step + window[None, :])
    else:
        count = g.op.Add(g.op.Div(g.op.Sub(total, _i64([size])), _i64([step])), _i64([1]))
        starts = g.op.Range(_i64(0), g.op.Squeeze(g.op.Mul(count, _i64([step]))), _i64(step))
        index = g.op.Add(g.op.Unsqueeze(starts, _i64([1])), window[None, :])
    windows = g.op.Gather(self, index, axis=axis)
    # Gather put (count, size) at axis; torch puts the window size last
    perm = [i for i in range(rank + 1) if i != axis + 1] + [axis + 1]
    return named(g, _transpose(g, windows, perm), outputs[0])


def _strided_index(size, stride, offset: int) -> np.ndarray:
    index = np.full(tuple(size), offset, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[axis] = n
        index = index + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return index


# aten::as_strided.default, aten::as_strided_copy.default
def aten_as_strided(g, sts, outputs, self, size, stride, storage_offset=None):
    "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)"
    val = sts.input_values[0]
    offset = storage_offset or 0
    static = all(type(v) is int for v in (*size, *stride, offset, *g.get_shape(self)))
    if val is None or not static or not val.is_contiguous() or val.storage_offset() != 0:
        raise UnsupportedError(
            "as_strided is only supported with static sizes on a contiguous tensor (a view "
            "of the tensor's own elements); use view/permute/slice ops instead."
        )
    numel = int(val.numel())
    index = _strided_index(size, stride, offset)
    if index.size and (index.min() < 0 or index.max() >= numel):
        raise UnsupportedError(
            f"as_strided(size={size}, stride={stride}, storage_offset={offset}) reads outside "
            f"the {numel} elements of its input."
        )
    flat = g.op.Reshape(self, _i64([-1]))
    if index.size == numel and np.array_equal(index.ravel(), np.arange(numel)):
        return named(g, g.op.Reshape(flat, _i64(list(size))), outputs[0])
    return named(g, g.op.Gather(flat, index), outputs[0])


# aten::_local_scalar_dense.default
def aten__local_scalar_dense(g, sts, outputs, self):
    "_local_scalar_dense(Tensor self) -> Scalar"
    scalar = g.op.Reshape(self, np.zeros((0,), dtype=np.int64))
    if g.get_type(self) == sts.dtype:
        return g.op.Identity(scalar, outputs=outputs)
    return g.op.Cast(scalar, to=sts.dtype, outputs=outputs)


CONVERTERS = (
    Converter("aten::view.default", aten_view),
    Converter("aten::_unsafe_view.default", aten_view),
    Converter("aten::view_copy.default", aten_view),
    Converter("aten::reshape.default", aten_reshape),
    Converter("aten::_reshape_alias.default", aten__reshape_alias),
    Converter("aten::view_as.default", aten_view_as),
    Converter("aten::reshape_as.default", aten_view_as),
    Converter("aten::flatten.using_ints", aten_flatten),
    Converter("aten::ravel.default", aten_ravel),
    Converter("aten::unflatten.int", aten_unflatten),
    Converter("aten::expand.default", aten_expand),
    Converter("aten::expand_copy.default", aten_expand),
    Converter("aten::expand_as.default", aten_expand_as),
    Converter("aten::permute.default", aten_permute),
    Converter("aten::permute_copy.default", aten_permute),
    Converter("aten::transpose.int", aten_transpose),
    Converter("aten::transpose_.default", aten_transpose),
    Converter("aten::transpose_copy.int", aten_transpose),
    Converter("aten::swapaxes.default", aten_swapaxes),
    Converter("aten::swapdims.default", aten_transpose),
    Converter("aten::mT.default", aten_mt),
    Converter("aten::movedim.int", aten_movedim_int),
    Converter("aten::moveaxis.int", aten_movedim_int),
    Converter("aten::movedim.intlist", aten_movedim_intlist),
    Converter("aten::squeeze.default", aten_squeeze),
    Converter("aten::squeeze_.default", aten_squeeze),
    Converter("aten::squeeze_copy.default", aten_squeeze),
    Converter("aten::squeeze.dim", aten_squeeze_dim),
    Converter("aten::squeeze_.dim", aten_squeeze_dim),
    Converter("aten::squeeze_copy.dim", aten_squeeze_dim),
    Converter("aten::squeeze.dims", aten_squeeze_dims),
    Converter("aten::squeeze_.dims", aten_squeeze_dims),
    Converter("aten::squeeze_copy.dims", aten_squeeze_dims),
    Converter("aten::unsqueeze.default", aten_unsqueeze),
    Converter("aten::unsqueeze_.default", aten_unsqueeze),
    Converter("aten::unsqueeze_copy.default", aten_unsqueeze),
    Converter("aten::clone.default", aten_clone),
    Converter("aten::contiguous.default", aten_contiguous),
    Converter("aten::alias.default", aten_alias),
    Converter("aten::alias_copy.default", aten_alias),
    Converter("aten::detach.default", aten_alias),
    Converter("aten::detach_.default", aten_alias),
    Converter("aten::lift_fresh_copy.default", aten_alias),
    Converter("aten::cat.default", aten_cat),
    Converter("aten::concat.default", aten_cat),
    Converter("aten::concatenate.default", aten_cat),
    Converter("aten::hstack.default", aten_hstack),
    Converter("aten::vstack.default", aten_vstack),
    Converter("aten::stack.default", aten_stack),
    Converter("aten::split.Tensor", aten_split),
    Converter("aten::split_copy.Tensor", aten_split),
    Converter("aten::split.sizes", aten_split_sizes),
    Converter("aten::split_with_sizes.default", aten_split_with_sizes),
    Converter("aten::split_with_sizes_copy.default", aten_split_with_sizes),
    Converter("aten::chunk.default", aten_chunk),
    Converter("aten::tensor_split.sections", aten_tensor_split_sections),
    Converter("aten::tensor_split.indices", aten_tensor_split_indices),
    Converter("aten::unbind.int", aten_unbind),
    Converter("aten::unbind_copy.int", aten_unbind),
    Converter("aten::slice.Tensor", aten_slice),
    Converter("aten::slice_copy.Tensor", aten_slice),
    Converter("aten::select.int", aten_select),
    Converter("aten::select_copy.int", aten_select),
    Converter("aten::narrow.default", aten_narrow),
    Converter("aten::narrow.Tensor", aten_narrow),
    Converter("aten::flip.default", aten_flip),
    Converter("aten::roll.default", aten_roll),
    Converter("aten::repeat.default", aten_repeat),
    Converter("aten::tile.default", aten_tile),
    Converter("aten::constant_pad_nd.default", aten_constant_pad_nd),
    Converter("aten::pad.default", aten_pad),
    Converter("aten::reflection_pad1d.default", aten_reflection_pad),
    Converter("aten::reflection_pad2d.default", aten_reflection_pad),
    Converter("aten::reflection_pad3d.default", aten_reflection_pad),
    Converter("aten::replication_pad1d.default", aten_replication_pad),
    Converter("aten::replication_pad2d.default", aten_replication_pad),
    Converter("aten::replication_pad3d.default", aten_replication_pad),
    Converter("aten::pixel_shuffle.default", aten_pixel_shuffle),
    Converter("aten::pixel_unshuffle.default", aten_pixel_unshuffle),
    Converter("aten::diagonal.default", aten_diagonal),
    Converter("aten::diagonal_copy.default", aten_diagonal),
    Converter("aten::unfold.default", aten_unfold),
    Converter("aten::as_strided.default", aten_as_strided),
    Converter("aten::as_strided_copy.default", aten_as_strided),
    Converter("aten::_local_scalar_dense.default", aten__local_scalar_dense),
    Converter("aten::item.default", aten__local_scalar_dense),
)
