"""SymInt/SymFloat/SymBool plumbing: sizes read with Shape, arithmetic kept in the graph.

These nodes are how torch.export keeps dynamic shapes dynamic; they are part of the
graph's structure, not operators, so the interpreter handles them itself. Symbolic
scalars are 0-d tensors (int64, double or bool).
"""

from __future__ import annotations

import math
import operator

import numpy as np
from onnx import TensorProto

from tonnx._errors import UnsupportedError


def _operand(g, value, elem_type: int) -> str:
    if type(value) is str:
        return value if g.get_type(value) == elem_type else g.op.Cast(value, to=elem_type)
    from tonnx.builder._dtypes import numpy_dtype

    return g.make_initializer("", np.array(value, dtype=numpy_dtype(elem_type)))


def _common_type(g, args) -> int:
    for a in args:
        if type(a) is str and g.get_type(a) == TensorProto.DOUBLE:
            return TensorProto.DOUBLE
        if isinstance(a, float):
            return TensorProto.DOUBLE
    return TensorProto.INT64


def sym_size(g, out: str, x: str, dim: int) -> str:
    shape = g.get_shape(x)
    rank = len(shape) if shape is not None else None
    if rank is not None and dim < 0:
        dim += rank
    # dim + 1 == 0 (the last axis, rank unknown) means "to the end", not "to axis 0"
    full = g.op.Shape(x, start=dim) if dim == -1 else g.op.Shape(x, start=dim, end=dim + 1)
    return g.op.Squeeze(full, np.array([0], dtype=np.int64), outputs=[out])


def sym_numel(g, out: str, x: str) -> str:
    return g.op.Size(x, outputs=[out])


def _binary(onnx_op: str):
    def convert(g, out: str, a, b) -> str:
        elem = _common_type(g, (a, b))
        return g.make_node(onnx_op, [_operand(g, a, elem), _operand(g, b, elem)], [out])

    return convert


def _compare(onnx_op: str, negate: bool = False):
    def convert(g, out: str, a, b) -> str:
        elem = _common_type(g, (a, b))
        inputs = [_operand(g, a, elem), _operand(g, b, elem)]
        if negate:
            return g.op.Not(g.make_node(onnx_op, inputs), outputs=[out])
        return g.make_node(onnx_op, inputs, [out])

    return convert


def _floordiv(g, out: str, a, b) -> str:
    elem = _common_type(g, (a, b))
    a, b = _operand(g, a, elem), _operand(g, b, elem)
    if elem == TensorProto.INT64:
        # a - a % b is an exact multiple of b (Mod with fmod=0 follows python's sign rule)
        return g.op.Div(g.op.Sub(a, g.op.Mod(a, b, fmod=0)), b, outputs=[out])
    return g.op.Floor(g.op.Div(a, b), outputs=[out])


def _mod(g, out: str, a, b) -> str:
    elem = _common_type(g, (a, b))
    fmod = 0 if elem == TensorProto.INT64 else 1
    if fmod:
        raise UnsupportedError("python % on symbolic floats is not supported")
    return g.op.Mod(_operand(g, a, elem), _operand(g, b, elem), fmod=0, outputs=[out])


def _truediv(g, out: str, a, b) -> str:
    a, b = _operand(g, a, TensorProto.DOUBLE), _operand(g, b, TensorProto.DOUBLE)
    return g.op.Div(a, b, outputs=[out])


def _neg(g, out: str, a) -> str:
    return g.op.Neg(a, outputs=[out])


def _to_float(g, out: str, a) -> str:
    return g.op.Identity(_operand(g, a, TensorProto.DOUBLE), outputs=[out])


def _to_int(g, out: str, a) -> str:
    # python int() truncates toward zero, as Cast does
    return g.op.Identity(_operand(g, a, TensorProto.INT64), outputs=[out])


def _rounding(onnx_op: str):
    def convert(g, out: str, a) -> str:
        value = g.make_node(onnx_op, [_operand(g, a, TensorProto.DOUBLE)])
        return g.op.Cast(value, to=TensorProto.INT64, outputs=[out])

    return convert


def _not(g, out: str, a) -> str:
    return g.op.Not(a, outputs=[out])


def _bool_binary(onnx_op: str):
    def convert(g, out: str, a, b) -> str:
        return g.make_node(onnx_op, [_operand(g, a, TensorProto.BOOL), _operand(g, b, TensorProto.BOOL)], [out])

    return convert


def _branch_type(g, t, f) -> int:
    def is_bool(v) -> bool:
        return isinstance(v, bool) or (type(v) is str and g.get_type(v) == TensorProto.BOOL)

    return TensorProto.BOOL if is_bool(t) and is_bool(f) else _common_type(g, (t, f))


def _sym_ite(g, out: str, b, t, f) -> str:
    """``t if b else f`` (torch.sym_ite) as a Where: both branches are sizes, computed anyway."""
    elem = _branch_type(g, t, f)
    if type(b) is not str:
        return g.op.Identity(_operand(g, t if b else f, elem), outputs=[out])
    inputs = [_operand(g, b, TensorProto.BOOL), _operand(g, t, elem), _operand(g, f, elem)]
    return g.op.Where(*inputs, outputs=[out])


def handlers() -> dict:
    """Target -> handler ``(g, out, *args)`` for the symbolic nodes torch.export emits."""
    import torch

    aten = torch.ops.aten
    table = {
        aten.sym_size.int: sym_size,
        aten.sym_numel.default: sym_numel,
        operator.add: _binary("Add"),
        operator.sub: _binary("Sub"),
        operator.mul: _binary("Mul"),
        operator.floordiv: _floordiv,
        operator.mod: _mod,
        operator.truediv: _truediv,
        operator.neg: _neg,
        operator.eq: _compare("Equal"),
        operator.ne: _compare("Equal", negate=True),
        operator.lt: _compare("Less"),
        operator.le: _compare("LessOrEqual"),
        operator.gt: _compare("Greater"),
        operator.ge: _compare("GreaterOrEqual"),
        operator.and_: _bool_binary("And"),
        operator.or_: _bool_binary("Or"),
        torch.sym_max: _binary("Max"),
        torch.sym_min: _binary("Min"),
        torch.sym_not: _not,
        torch.sym_ite: _sym_ite,
        torch.sym_float: _to_float,
        torch.sym_int: _to_int,
        math.ceil: _rounding("Ceil"),
        math.floor: _rounding("Floor"),
    }
    return table


def no_op_targets() -> frozenset:
    """Runtime checks torch.export records; they produce nothing in ONNX."""
    import torch

    aten = torch.ops.aten
    names = (
        "_assert_scalar",
        "sym_constrain_range_for_size",
        "sym_constrain_range",
        "_assert_tensor_metadata",
        "_assert_async",
    )
    found = set()
    for name in names:
        packet = getattr(aten, name, None)
        if packet is not None:
            found.update(getattr(packet, o) for o in packet.overloads())
    return frozenset(found)
