"""Reduction axes counted from the front, for onnxruntime 1.31.1.

onnxruntime 1.31.1's ``Reduce*``, ``ArgMax`` and ``ArgMin`` ignore a negative axis when their
input is empty: ``ReduceMax`` of a (3, 0, 0) tensor over axis -1 with ``keepdims=1`` gives
(3, 0, 0) instead of (3, 0, 1), and the graph then fails or returns torch's result in the
wrong shape (issue 31: cummax, logcumsumexp and the determinants of empty inputs). Counted
from the front, the same axes give the right shapes on every onnxruntime, so every reduction
whose input rank the builder knows gets its axes rewritten so, whatever converter emitted it.
The builder does not know the rank of every intermediate value: a converter reducing one
counts its axes from the front itself (aten's reductions, running ops and determinants do).
"""

from __future__ import annotations

import numpy as np

_REDUCTIONS = frozenset(
    {
        "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
        "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
    }
)
_ARG_REDUCTIONS = frozenset({"ArgMax", "ArgMin"})


def count_reduction_axes_from_front(g) -> int:
    """Rewrites the negative axes of every reduction of ``g`` (its subgraphs and local
    functions too) whose input rank is known; returns how many nodes changed."""
    changed = 0
    for node in g.nodes:
        if not node.domain and node.op_type in _REDUCTIONS:
            changed += _reduction_axes(g, node)
        elif not node.domain and node.op_type in _ARG_REDUCTIONS:
            changed += _arg_axis(g, node)
        for sub in node.subgraphs():
            changed += count_reduction_axes_from_front(sub)
    if g.parent is None and g.function_key is None:
        for body in g.functions.values():
            changed += count_reduction_axes_from_front(body)
    return changed


def _reduction_axes(g, node) -> int:
    if len(node.inputs) < 2 or not node.inputs[1] or not g.is_constant(node.inputs[1]):
        return 0
    axes = np.asarray(g.get_constant(node.inputs[1])).astype(np.int64)
    shape = g.get_shape(node.inputs[0])
    if shape is None or not (axes < 0).any():
        return 0
    front = np.where(axes < 0, axes + len(shape), axes).astype(np.int64)
    node.inputs[1] = g.make_initializer("", front.reshape(axes.shape))
    return 1


def _arg_axis(g, node) -> int:
    axis = node.attributes.get("axis", 0)
    shape = g.get_shape(node.inputs[0])
    if shape is None or axis >= 0:
        return 0
    node.attributes = {**node.attributes, "axis": int(axis) + len(shape)}
    return 1
