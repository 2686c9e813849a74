"""Exact elementwise formulas more than one pack needs (aten's and prims' atan2).

Published through ``tonnx.converters``: packs never import each other, so what two packs
share lives here."""

from __future__ import annotations

import math

import numpy as np

from tonnx.builder._dtypes import numpy_dtype


def constant(value, elem: int) -> np.ndarray:
    """``value`` as a numpy scalar of ONNX element type ``elem`` (for ``g.op`` inputs)."""
    return np.array(value, dtype=numpy_dtype(elem))


def signbit(g, v: str) -> str:
    """True for negative values, -0.0 and -inf (1 / -0.0 is -inf), as ``torch.signbit``."""
    elem = g.get_type(v)
    zero = constant(0, elem)
    negative_zero = g.op.And(g.op.Equal(v, zero), g.op.Less(g.op.Div(constant(1, elem), v), zero))
    return g.op.Or(g.op.Less(v, zero), negative_zero)


def quadrant_atan(g, y: str, x: str) -> str:
    """``atan2(y, x)``: atan(y / x) moved to the right quadrant, with C's signed-zero and
    infinity cases (both inputs of one floating type)."""
    elem = g.get_type(y)
    y_neg, x_neg = signbit(g, y), signbit(g, x)
    half_turn = g.op.Where(y_neg, constant(-math.pi, elem), constant(math.pi, elem))
    angle = g.op.Atan(g.op.Div(y, x))
    angle = g.op.Where(x_neg, g.op.Add(angle, half_turn), angle)
    zeros = g.op.And(g.op.Equal(y, constant(0, elem)), g.op.Equal(x, constant(0, elem)))
    angle = g.op.Where(zeros, g.op.Where(x_neg, half_turn, y), angle)
    corner = g.op.Where(x_neg, constant(3 * math.pi / 4, elem), constant(math.pi / 4, elem))
    corner = g.op.Where(y_neg, g.op.Neg(corner), corner)
    infinities = g.op.And(g.op.IsInf(y), g.op.IsInf(x))
    return g.op.Where(infinities, corner, angle)
