"""Evaluation of cheap ONNX ops on constants, with numpy, for constant folding.

Only ops that are shape bookkeeping or trivially exact are folded: folding must never
change a number, and it must stay cheap (the exporter's reason to exist is speed).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tonnx.builder._dtypes import numpy_dtype

#: Results larger than this are only folded by the pass, when the input has one consumer.
EAGER_MAX_ELEMENTS = 65536


def _shape(g, inputs, attrs):
    # the input need not be constant: a fully static shape is enough
    shape = g.get_shape(inputs[0])
    start = attrs.get("start", 0)
    end = attrs.get("end", None)
    return [np.array(shape[start:end], dtype=np.int64)]


def _reshape(g, inputs, attrs):
    x = g.get_constant(inputs[0])
    shape = g.get_constant(inputs[1]).tolist()
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def _unsqueeze(g, inputs, attrs):
    x = g.get_constant(inputs[0])
    axes = g.get_constant(inputs[1]).ravel()
    rank = x.ndim + len(axes)
    for a in sorted(int(a) % rank for a in axes):
        x = np.expand_dims(x, a)
    return [x]


def _squeeze(g, inputs, attrs):
    x = g.get_constant(inputs[0])
    if len(inputs) < 2 or not inputs[1]:
        return [np.squeeze(x)]
    axes = tuple(int(a) for a in g.get_constant(inputs[1]).ravel())
    return [np.squeeze(x, axis=axes)]


def _transpose(g, inputs, attrs):
    x = g.get_constant(inputs[0])
    perm = attrs.get("perm")
    return [np.transpose(x, perm)]


def _concat(g, inputs, attrs):
    return [np.concatenate([g.get_constant(i) for i in inputs], axis=attrs["axis"])]


def _cast(g, inputs, attrs):
    return [g.get_constant(inputs[0]).astype(numpy_dtype(attrs["to"]))]


def _gather(g, inputs, attrs):
    x = g.get_constant(inputs[0])
    return [np.take(x, g.get_constant(inputs[1]), axis=attrs.get("axis", 0))]


def _identity(g, inputs, attrs):
    return [g.get_constant(inputs[0])]


def _binary(fn: Callable) -> Callable:
    def fold(g, inputs, attrs):
        a, b = g.get_constant(inputs[0]), g.get_constant(inputs[1])
        return [np.asarray(fn(a, b)).astype(a.dtype, copy=False)]

    return fold


def _variadic(fn: Callable) -> Callable:
    """Max/Min take one or more inputs (not two): fold them all."""

    def fold(g, inputs, attrs):
        values = [g.get_constant(i) for i in inputs]
        result = values[0]
        for v in values[1:]:
            result = fn(result, v)
        return [np.asarray(result).astype(values[0].dtype, copy=False)]

    return fold


def _unary(fn: Callable) -> Callable:
    def fold(g, inputs, attrs):
        return [np.asarray(fn(g.get_constant(inputs[0])))]

    return fold


def _compare(fn: Callable) -> Callable:
    def fold(g, inputs, attrs):
        return [np.asarray(fn(g.get_constant(inputs[0]), g.get_constant(inputs[1])))]

    return fold


def _where(g, inputs, attrs):
    c, x, y = (g.get_constant(i) for i in inputs)
    return [np.where(c, x, y).astype(np.result_type(x, y), copy=False)]


def _range(g, inputs, attrs):
    start, limit, delta = (g.get_constant(i) for i in inputs)
    return [np.arange(start, limit, delta, dtype=start.dtype)]


def _expand(g, inputs, attrs):
    x = g.get_constant(inputs[0])
    shape = np.broadcast_shapes(x.shape, tuple(g.get_constant(inputs[1]).tolist()))
    return [np.broadcast_to(x, shape)]


def _cumsum(g, inputs, attrs):
    if attrs.get("exclusive", 0) or attrs.get("reverse", 0):
        return None
    x = g.get_constant(inputs[0])
    return [np.cumsum(x, axis=int(g.get_constant(inputs[1])), dtype=x.dtype)]


def _gather_nd(g, inputs, attrs):
    if attrs.get("batch_dims", 0):
        return None
    data, indices = g.get_constant(inputs[0]), g.get_constant(inputs[1])
    return [np.asarray(data[tuple(np.moveaxis(indices, -1, 0))])]


def _slice(g, inputs, attrs):
    data = g.get_constant(inputs[0])
    starts, ends = g.get_constant(inputs[1]), g.get_constant(inputs[2])
    axes = g.get_constant(inputs[3]) if len(inputs) > 3 and inputs[3] else range(len(starts))
    steps = g.get_constant(inputs[4]) if len(inputs) > 4 and inputs[4] else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[int(axis)] = slice(int(start), int(end), int(step))
    return [data[tuple(index)]]


def _constant_of_shape(g, inputs, attrs):
    from onnx import numpy_helper

    value = attrs.get("value")
    fill = numpy_helper.to_array(value).reshape(()) if value is not None else np.float32(0)
    return [np.full(tuple(g.get_constant(inputs[0]).tolist()), fill, dtype=fill.dtype)]


_FOLDERS: dict[str, Callable] = {
    "Shape": _shape,
    "Reshape": _reshape,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Transpose": _transpose,
    "Concat": _concat,
    "Cast": _cast,
    "Gather": _gather,
    "Identity": _identity,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Neg": _unary(np.negative),
    "Max": _variadic(np.maximum),
    "Min": _variadic(np.minimum),
    "Not": _unary(np.logical_not),
    "And": _compare(np.logical_and),
    "Or": _compare(np.logical_or),
    "Xor": _compare(np.logical_xor),
    "Equal": _compare(np.equal),
    "Less": _compare(np.less),
    "LessOrEqual": _compare(np.less_equal),
    "Greater": _compare(np.greater),
    "GreaterOrEqual": _compare(np.greater_equal),
    "Where": _where,
    "Range": _range,
    "Expand": _expand,
    "CumSum": _cumsum,
    "GatherND": _gather_nd,
    "Slice": _slice,
    "ConstantOfShape": _constant_of_shape,
}
# Arithmetic folded only on integers: float rounding could differ from the runtime's.
_INTEGER_ONLY = {"Add", "Sub", "Mul", "Neg", "Max", "Min", "Range", "CumSum"}


def foldable_op(op_type: str) -> bool:
    return op_type in _FOLDERS


def can_fold(g, op_type: str, inputs: list[str]) -> bool:
    """True when every input is a small constant and the op is one we evaluate exactly."""
    if op_type not in _FOLDERS or not inputs:
        return False
    if op_type == "Shape":
        shape = g.get_shape(inputs[0])
        return shape is not None and all(type(d) is int for d in shape)
    for i in inputs:
        if not i or not g.is_constant(i):
            return False
        shape = g.get_shape(i)
        if shape is None or _size(shape) > EAGER_MAX_ELEMENTS:
            return False
        if op_type in _INTEGER_ONLY and not _is_integer(g, i):
            # float arithmetic could round differently from the runtime: keep the node
            return False
    return True


def fold(
    g, op_type: str, inputs: list[str], attributes: dict, max_elements: int = EAGER_MAX_ELEMENTS
) -> list[np.ndarray] | None:
    """The op's results, or None when the op's options or the result's size say no."""
    values = _FOLDERS[op_type](g, inputs, attributes)
    if values is None or any(np.size(v) > max_elements for v in values):
        return None
    return values


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _is_integer(g, name: str) -> bool:
    return np.issubdtype(g.get_constant(name).dtype, np.integer)
