"""A cache write ``buffer.index_copy(d, arange(n) + start, update)`` -> ``TensorScatter``
(opset 24).

transformers' ``StaticLayer.update`` writes the new keys and values that way. The aten
pack converts ``index_copy`` to ``ScatterElements(buffer, Expand(Reshape(arange(n) + start),
Shape(update)), update, axis=d)``; when the index is provably ``start + 0 .. n-1``, with
``n`` the update's size along ``d`` and one ``start`` for the whole batch, that is
TensorScatter's linear write at ``write_indices = start`` for every batch entry: the op
made for a KV cache buffer (``present`` has the buffer's shape). ``d`` must not be the
batch axis 0. An index beyond the buffer is an error in torch; the op's result there is
not compared.

The cache tonnx exports for ``DynamicCache`` is ``Concat(past, new)``: its present grows
by ``n``, which TensorScatter (present shaped as past) does not express; it keeps Concat.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ._patterns import constant, int64, ints, producer, same, scalar, shape

#: the first opset with TensorScatter
OPSET = 24


def _arange(ctx, name: str, n) -> bool:
    """``name`` holds ``0, 1, 2, ...`` (``n`` values when a constant; a Range's length is
    the index's, checked by the caller)."""
    value = constant(ctx, name)
    if value is not None:
        return type(n) is int and value.ndim == 1 and np.array_equal(value, np.arange(n))
    node = producer(ctx, name, "Range")
    if node is None:
        return False
    return scalar(ctx, node.inputs[0]) == 0 and scalar(ctx, node.inputs[2]) == 1


def _start(ctx, index: str, n):
    """``start`` when ``index`` is ``arange(n) + start`` (one int64 element), else None."""
    add = producer(ctx, index, "Add")
    index_shape = shape(ctx, index)
    if add is None or index_shape is None or len(index_shape) != 1 or not same(index_shape[0], n):
        return None
    for ar, start in (add.inputs, add.inputs[::-1]):
        start_shape = shape(ctx, start)
        one_int = start_shape in ((), (1,)) and ctx.g.get_type(start) == TensorProto.INT64
        if one_int and _arange(ctx, ar, n):
            return start
    return None


def _index_along(ctx, positions: str, axis: int, rank: int):
    """The 1-D index when ``positions`` is ``Expand(Reshape(index, [1, .., -1, .., 1]), _)``:
    the index along ``axis``, the same at every other coordinate (ScatterElements' indices
    have the update's shape)."""
    expand = producer(ctx, positions, "Expand")
    reshape = expand and producer(ctx, expand.inputs[0], "Reshape")
    target = reshape and ints(ctx, reshape.inputs[1])
    if target is None or len(target) != rank:
        return None
    if any(t != 1 for i, t in enumerate(target) if i != axis):
        return None
    index_shape = shape(ctx, reshape.inputs[0])
    return reshape.inputs[0] if index_shape is not None and len(index_shape) == 1 else None


def _write_indices(ctx, start: str, buffer: str, new: list) -> str:
    """(B,) int64: ``start`` for every batch entry."""
    if shape(ctx, start) == ():
        flat = ctx.node("Reshape", [start, int64(ctx, [1])], 1)
        new.append(flat)
        start = flat.outputs[0]
    b = shape(ctx, buffer)[0]
    if type(b) is int:
        target = int64(ctx, [b])
    else:
        size = ctx.node("Shape", [buffer], 1, start=0, end=1)
        new.append(size)
        target = size.outputs[0]
    node = ctx.node("Expand", [start, target], 1)
    new.append(node)
    return node.outputs[0]


def tensor_scatter(ctx, node):
    """``ScatterElements`` of ``index_copy`` at ``arange(n) + start`` -> ``TensorScatter``."""
    if ctx.g.main_opset < OPSET or node.attributes.get("reduction") not in (None, "none", b"none"):
        return None
    buffer, positions, update = node.inputs
    b_shape, u_shape = shape(ctx, buffer), shape(ctx, update)
    if b_shape is None or u_shape is None or len(b_shape) != len(u_shape) or len(b_shape) < 2:
        return None
    rank = len(b_shape)
    axis = node.attributes.get("axis", 0) % rank
    others = [i for i in range(rank) if i != axis]
    if axis == 0 or not all(same(b_shape[i], u_shape[i]) for i in others):
        return None
    index = _index_along(ctx, positions, axis, rank)
    start = index and _start(ctx, index, u_shape[axis])
    if start is None:
        return None
    new: list = []
    write = _write_indices(ctx, start, buffer, new)
    return [*new, ctx.node("TensorScatter", [buffer, update, write], node.outputs, axis=axis)]
