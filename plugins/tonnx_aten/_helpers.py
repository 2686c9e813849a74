"""Helpers shared by the aten converters: dtype handling and constants."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx.builder._dtypes import numpy_dtype


def cast(g, x: str, elem_type: int) -> str:
    """``x`` in ``elem_type``, with a Cast only when the type differs."""
    if g.get_type(x) == elem_type:
        return x
    return g.op.Cast(x, to=elem_type)


def operand(g, value, elem_type: int) -> str:
    """A tensor name or a python scalar as a tensor of ``elem_type`` (torch promotion done).

    torch computes an op in the dtype of its result (known from ``sts``); casting each
    operand to that dtype first is how a converter follows torch's type promotion.
    """
    if type(value) is str:
        return cast(g, value, elem_type)
    return g.make_initializer("", np.array(value, dtype=numpy_dtype(elem_type)))


def is_float(elem_type: int) -> bool:
    return elem_type in (
        TensorProto.FLOAT,
        TensorProto.FLOAT16,
        TensorProto.BFLOAT16,
        TensorProto.DOUBLE,
    )


def shape_tensor(g, dims) -> str:
    """A 1-D int64 tensor from a list of ints and SymInt results (0-d int64 names).

    Static lists become one constant; dynamic ones a Concat of constant runs and the
    unsqueezed symbolic sizes, so dynamic shapes stay dynamic.
    """
    if all(type(d) is int for d in dims):
        return g.make_initializer("", np.array(dims, dtype=np.int64))
    pieces, run = [], []
    for d in dims:
        if type(d) is int:
            run.append(d)
            continue
        if run:
            pieces.append(g.make_initializer("", np.array(run, dtype=np.int64)))
            run = []
        pieces.append(g.op.Unsqueeze(cast(g, d, TensorProto.INT64), np.array([0], dtype=np.int64)))
    if run:
        pieces.append(g.make_initializer("", np.array(run, dtype=np.int64)))
    return pieces[0] if len(pieces) == 1 else g.op.Concat(*pieces, axis=0)
