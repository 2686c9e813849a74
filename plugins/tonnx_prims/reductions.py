"""Reduction prims: sum, prod, amax, amin and var over explicit dims.

``dims`` lists the dims to reduce, which are removed from the result (prims have no
keepdim). ``dims=[]`` on a tensor of rank > 0 is refused: torch's meta function reduces
nothing there while its eager kernel (``torch.sum(x, [])``) reduces every dim, so there is
no single answer to match. A prim keeps its input dtype (``output_dtype`` aside): the
exported graph records ``prims.sum(int32)`` as int32, which this pack follows, while
torch's eager kernel returns int64 with the same values. Float16/bfloat16 accumulate in
float32 and round once, as torch's CPU kernels do.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, is_float, numpy_dtype

BOOL = TensorProto.BOOL
FLOAT = TensorProto.FLOAT
INT32 = TensorProto.INT32
INT64 = TensorProto.INT64
_REDUCED = (TensorProto.FLOAT16, TensorProto.BFLOAT16)
_SMALL_INTS = (
    TensorProto.BOOL, TensorProto.INT8, TensorProto.INT16, TensorProto.UINT8, TensorProto.UINT16
)


def _axes(g, inp: str, dims, name: str) -> list[int]:
    """The dims to reduce, non-negative; refuses ``[]`` on a tensor of rank > 0."""
    rank = g.get_rank(inp)
    if dims is None:
        return list(range(rank))
    if not dims and rank > 0:
        raise UnsupportedError(
            f"prims.{name} with dims=[] on a rank-{rank} tensor: torch's meta reduces no dim "
            "and its eager kernel every dim; pass the dims explicitly."
        )
    return sorted(d % rank for d in dims) if rank else []


def _compute_type(elem: int) -> int:
    """float32 for half types, int64 for bool and 8/16-bit integers (results wrap back)."""
    if elem in _REDUCED:
        return FLOAT
    return INT64 if elem in _SMALL_INTS else elem


def _reduce(g, sts, outputs, op_type: str, inp, dims, name: str) -> str:
    """``op_type`` over ``dims`` (keepdims=0), computed in float32 for half types."""
    elem = sts.dtype
    axes = _axes(g, inp, dims, name)
    if not axes:
        return inp  # a 0-d tensor: nothing to reduce
    x = cast(g, inp, _compute_type(elem))
    reduce = getattr(g.op, op_type)
    if g.get_type(x) == elem:
        return reduce(x, np.array(axes, dtype=np.int64), keepdims=0, outputs=outputs)
    reduced = reduce(x, np.array(axes, dtype=np.int64), keepdims=0)
    return g.op.Cast(reduced, to=elem, outputs=outputs)


def _no_bool(g, inp, name: str) -> None:
    if g.get_type(inp) == BOOL:
        raise UnsupportedError(
            f"prims.{name} of a bool tensor: torch's meta says bool, its eager kernel int64."
        )


# prims::sum.default
def prims_sum(g, sts, outputs, inp, dims, output_dtype=None):
    "sum(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor"
    _no_bool(g, inp, "sum")
    return _reduce(g, sts, outputs, "ReduceSum", inp, dims, "sum")


# prims::prod.default
def prims_prod(g, sts, outputs, inp, dims, output_dtype=None):
    "prod(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor"
    _no_bool(g, inp, "prod")
    return _reduce(g, sts, outputs, "ReduceProd", inp, dims, "prod")


def _extremum(g, sts, outputs, op_type: str, inp, dims, name: str) -> str:
    """amax/amin; a nan anywhere in a reduced slice gives nan, as in torch."""
    elem = sts.dtype
    if not is_float(elem) or g.get_rank(inp) == 0:
        return _reduce(g, sts, outputs, op_type, inp, dims, name)
    result = _reduce(g, sts, 1, op_type, inp, dims, name)
    axes = np.array(_axes(g, inp, dims, name), dtype=np.int64)
    nans = g.op.Cast(g.op.IsNaN(cast(g, inp, _compute_type(elem))), to=INT32)
    has_nan = g.op.Cast(g.op.ReduceMax(nans, axes, keepdims=0), to=BOOL)
    nan = np.array(np.nan, dtype=numpy_dtype(elem))
    return g.op.Where(has_nan, nan, result, outputs=outputs)


# prims::amax.default
def prims_amax(g, sts, outputs, inp, dims, output_dtype=None):
    "amax(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor"
    return _extremum(g, sts, outputs, "ReduceMax", inp, dims, "amax")


# prims::amin.default
def prims_amin(g, sts, outputs, inp, dims, output_dtype=None):
    "amin(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor"
    return _extremum(g, sts, outputs, "ReduceMin", inp, dims, "amin")


# prims::var.default
def prims_var(g, sts, outputs, inp, dims, correction=1, output_dtype=None):
    "var(Tensor inp, int[]? dims, float? correction=1, *, ScalarType? output_dtype=None) -> Tensor"
    elem = sts.dtype
    if not is_float(elem):
        raise UnsupportedError(f"prims.var of a non-floating tensor ({elem}): torch raises.")
    axes = _axes(g, inp, dims, "var")
    compute = _compute_type(elem)
    x = cast(g, inp, compute)
    if not axes:
        # a 0-d tensor, one sample: (x - x)^2 / max(1 - correction, 0)
        zero = g.op.Sub(x, x)
        var = g.op.Div(g.op.Mul(zero, zero), _divisor(g, inp, [], correction, compute))
        return g.op.Cast(var, to=elem, outputs=outputs)
    const_axes = np.array(axes, dtype=np.int64)
    centered = g.op.Sub(x, g.op.ReduceMean(x, const_axes, keepdims=1))
    squares = g.op.ReduceSum(g.op.Mul(centered, centered), const_axes, keepdims=0)
    divisor = _divisor(g, inp, axes, correction, compute)
    if compute == elem:
        return g.op.Div(squares, divisor, outputs=outputs)
    return g.op.Cast(g.op.Div(squares, divisor), to=elem, outputs=outputs)


def _divisor(g, x: str, axes: list[int], correction, compute: int):
    """max(N - correction, 0), N the number of reduced elements (dynamic sizes read at run)."""
    correction = 1.0 if correction is None else float(correction)
    shape = g.get_shape(x)
    sizes = [shape[a] for a in axes]
    if all(type(s) is int for s in sizes):
        count = float(np.prod(sizes, dtype=np.int64)) if sizes else 1.0
        return np.array(max(count - correction, 0.0), dtype=numpy_dtype(compute))
    gathered = g.op.Gather(g.op.Shape(x), np.array(axes, dtype=np.int64), axis=0)
    count = g.op.Cast(g.op.ReduceProd(gathered, keepdims=0), to=TensorProto.DOUBLE)
    divisor = g.op.Max(g.op.Sub(count, np.array(correction)), np.array(0.0))
    return g.op.Cast(divisor, to=compute)


CONVERTERS = (
    Converter("prims::sum.default", prims_sum),
    Converter("prims::prod.default", prims_prod),
    Converter("prims::amax.default", prims_amax),
    Converter("prims::amin.default", prims_amin),
    Converter("prims::var.default", prims_var),
)
