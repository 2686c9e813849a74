"""Helpers for converters (published by tonnx.converters): dtype handling, operands, shapes."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .builder._dtypes import numpy_dtype


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


def opmath_type(elem_type: int) -> int:
    """Type torch's CPU kernels compute in: float32 for float16/bfloat16, else the type."""
    if elem_type in (TensorProto.FLOAT16, TensorProto.BFLOAT16):
        return TensorProto.FLOAT
    return elem_type


def trunc(g, x: str) -> str:
    """Rounds a float tensor toward zero (ONNX has no Trunc); keeps -0.0, inf and nan."""
    return g.op.Where(g.op.Less(x, 0), g.op.Ceil(x), g.op.Floor(x))


def op_accepts(g, op_type: str, elem_type: int) -> bool:
    """True when ONNX ``op_type`` at the target opset accepts inputs of ``elem_type``.

    Checked on the op's first type constraint (``Sin`` takes bfloat16 from opset 22 only,
    ``IsInf`` float16 from opset 20): convert through float32 when this is False.
    """
    import onnx.defs
    from onnx import helper

    schema = onnx.defs.get_schema(op_type, g.main_opset)
    name = helper.tensor_dtype_to_string(elem_type).split(".")[-1].lower()
    return f"tensor({name})" in schema.type_constraints[0].allowed_type_strs


def output_used(sts, outputs, i: int) -> bool:
    """True when output ``i`` of a multi-output op is read by the graph.

    torch.export leaves ``getitem`` nodes without users (the indices of a max pooling
    whose caller dropped them): the interpreter names them, but nothing reads them.
    """
    import operator

    if not outputs[i]:
        return False
    for user in sts.node.users:
        if user.target is not operator.getitem:
            return True  # the whole tuple is used
        if user.args[1] == i and user.users:
            return True
    return False


def unused_output(g, elem_type: int) -> str:
    """A placeholder for an output nobody reads (see ``output_used``), removed as dead code."""
    return g.make_initializer("", np.zeros((0,), dtype=numpy_dtype(elem_type)), dedup=False)
