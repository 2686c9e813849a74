"""Small helpers the rewrite rules share: reading producers, constants and shapes."""

from __future__ import annotations

import numpy as np


def same(a, b) -> bool:
    """Two dimensions known to be equal (the same int or the same symbol)."""
    return a == b and type(a) is type(b)


def source(ctx, name: str):
    """(name, producing node) after looking through Identity nodes; node None if none."""
    node = ctx.producer(name)
    while node is not None and node.op_type == "Identity" and not node.domain:
        name = node.inputs[0]
        node = ctx.producer(name)
    return name, node


def producer_of(ctx, name: str, op_type: str, domain: str = ""):
    """The node computing ``name`` (through Identity) if it is an ``op_type`` node."""
    _, node = source(ctx, name)
    if node is None or node.op_type != op_type or node.domain != domain:
        return None
    return node


def constant(ctx, name: str) -> np.ndarray | None:
    g = ctx.g
    return g.get_constant(name) if name and g.is_constant(name) else None


def scalar(ctx, name: str) -> float | None:
    """The value of a constant with one element, else None."""
    value = constant(ctx, name)
    if value is None or value.size != 1:
        return None
    return float(value.reshape(-1)[0])


def last_axis(ctx, axes_name: str, rank: int) -> bool:
    """True when the constant ``axes`` input is exactly the last axis."""
    axes = constant(ctx, axes_name)
    return axes is not None and axes.size == 1 and int(axes.reshape(-1)[0]) in (-1, rank - 1)


def shape(ctx, name: str):
    return ctx.g.get_shape(name)


def same_value(ctx, a: str, b: str, depth: int = 4) -> bool:
    """``a`` and ``b`` are the same result or computed alike from the same results (what
    common subexpression elimination would merge after the rewrites)."""
    if a == b:
        return True
    na, nb = ctx.producer(a), ctx.producer(b)
    if depth == 0 or na is None or nb is None or na.op_type != nb.op_type or na.domain != nb.domain:
        return False
    if na.attributes != nb.attributes or len(na.inputs) != len(nb.inputs) or na.outputs.index(a) != nb.outputs.index(b):
        return False
    return all(same_value(ctx, x, y, depth - 1) for x, y in zip(na.inputs, nb.inputs))
