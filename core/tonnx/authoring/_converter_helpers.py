"""Helpers for converters (published by tonnx.converters): dtype handling, operands, shapes."""

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
    """A 1-D int64 tensor from ints and dynamic sizes, so dynamic shapes stay dynamic.

    A dynamic entry is a result name: a 0-d integer (a SymInt argument, ``sym_size``) or a
    1-D int64 tensor of one element (a ``Shape`` slice, see ``shape_of``; a name of unknown
    shape is taken as 1-D). Static runs
    become constants and everything is concatenated once.
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
        d = cast(g, d, TensorProto.INT64)
        if g.get_shape(d) == ():  # a 0-d size; sizes computed by nodes are 1-D
            d = g.op.Unsqueeze(d, np.array([0], dtype=np.int64))
        pieces.append(d)
    if run:
        pieces.append(g.make_initializer("", np.array(run, dtype=np.int64)))
    return pieces[0] if len(pieces) == 1 else g.op.Concat(*pieces, axis=0)


def shape_of(g, x: str, start: int = 0, end: int | None = None) -> str:
    """1-D int64 tensor of ``x``'s dimensions ``start:end``: a constant when they are static."""
    dims = g.get_shape(x)[start:end]
    if all(type(d) is int for d in dims):
        return g.make_initializer("", np.array(dims, dtype=np.int64))
    kwargs = {"start": start} if end is None else {"start": start, "end": end}
    return g.op.Shape(x, **kwargs)


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

    The interpreter names an output ``""`` when nothing reads it (``sts.outputs_used``),
    including the ``getitem`` nodes without users torch.export leaves behind.
    """
    return bool(outputs[i])


def named(g, result: str, output: str) -> str:
    """``result`` under the name ``output`` the interpreter asked for (``outputs[i]``).

    For a converter whose result comes out of helpers that cannot take ``outputs``: the
    node of this converter that produced ``result`` is renamed (and its readers, all added
    by this converter too), no node is added. A result no node of this converter made (an
    input returned as is, a constant) is returned unchanged: the interpreter aliases it.
    """
    if result == output or not output:
        return result
    added = g.nodes[g.op_start:]
    for k in range(len(added) - 1, -1, -1):
        outs = added[k].outputs
        if result in outs:
            outs[outs.index(result)] = g._claim(output)
            for reader in added[k + 1:]:
                reader.inputs = [output if i == result else i for i in reader.inputs]
            g.results.discard(result)
            for table in (g.types, g.shapes):
                if result in table:
                    table[output] = table.pop(result)
            return output
    return result


def unused_output(g, elem_type: int) -> str:
    """A placeholder for an output nobody reads (see ``output_used``), removed as dead code."""
    return g.make_initializer("", np.zeros((0,), dtype=numpy_dtype(elem_type)), dedup=False)
