"""Evaluation of cheap ONNX ops on constants, with numpy, for constant folding.

Only ops that are shape bookkeeping or trivially exact are folded: folding must never
change a number, and it must stay cheap (the exporter's reason to exist is speed).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._dtypes import numpy_dtype

#: Results larger than this are only folded by the pass, when the input has one consumer.
EAGER_MAX_ELEMENTS = 1024


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
}
_INTEGER_ONLY = {"Add", "Sub", "Mul"}


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


def fold(g, op_type: str, inputs: list[str], attributes: dict) -> list[np.ndarray] | None:
    return _FOLDERS[op_type](g, inputs, attributes)


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _is_integer(g, name: str) -> bool:
    return np.issubdtype(g.get_constant(name).dtype, np.integer)
