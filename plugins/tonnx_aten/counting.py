"""Counting and searching: histc, bincount, searchsorted, unique.

Counts are accumulated with ``ScatterElements(reduction="add")`` (linear in the input, no
one-hot), in the order torch's CPU kernels add them. Each converter follows the kernel's
arithmetic step by step where it decides a bin (histc); float unique is a stable sort
rather than ONNX ``Unique`` (which orders NaN unlike torch).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, numpy_dtype, operand

INT64 = TensorProto.INT64
BOOL = TensorProto.BOOL
_FLOATS = (TensorProto.FLOAT, TensorProto.DOUBLE)


def _i64(*values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _zeros(g, size: str, elem: int) -> str:
    """A 1-D tensor of ``size`` (a 1-element int64 tensor) zeros of ``elem``."""
    from onnx import helper

    value = helper.make_tensor("value", elem, [1], [0])
    return g.op.ConstantOfShape(size, value=value)


def _scatter_add(g, size: str, index: str, updates: str, outputs) -> str:
    zeros = _zeros(g, size, g.get_type(updates))
    return g.op.ScatterElements(zeros, index, updates, axis=0, reduction="add", outputs=outputs)


def _data_range(g, x: str, elem: int) -> tuple[str, str]:
    """torch's range when min == max: the data's min and max, widened by 1 when equal."""
    low, high = g.op.ReduceMin(x, keepdims=0), g.op.ReduceMax(x, keepdims=0)
    same = g.op.Equal(low, high)
    one = operand(g, 1, elem)
    return g.op.Where(same, g.op.Sub(low, one), low), g.op.Where(same, g.op.Add(high, one), high)


# aten::histc.default
def aten_histc(g, sts, outputs, self, bins=100, min=0, max=0):
    "histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor"
    elem = sts.dtype
    if elem not in _FLOATS:
        why = ("torch accumulates the counts in that type" if elem in (TensorProto.FLOAT16, TensorProto.BFLOAT16)
               else "torch's CPU kernel refuses it (the CUDA one counts integers)")
        raise UnsupportedError(
            f"histc of {TensorProto.DataType.Name(elem).lower()}: {why}; only float32 and float64 are "
            "converted exactly"
        )
    x = g.op.Reshape(self, _i64(-1))
    if min == max:
        low, high = _data_range(g, x, elem)
        width = g.op.Sub(high, low)
    else:
        low, high = np.array([min, max], dtype=numpy_dtype(elem))  # the edges, rounded as torch does
        if not low < high:
            raise UnsupportedError(f"histc with min={min} > max={max} (torch rejects it)")
        width = operand(g, float(high - low), elem)
        low, high = operand(g, float(low), elem), operand(g, float(high), elem)
    # the kernel's LINEAR_INTERPOLATION: pos = (x - min) * bins / (max - min), truncated,
    # each step in the input type; x == max goes to the last bin; outside [min, max] skipped
    scaled = g.op.Div(g.op.Mul(g.op.Sub(x, low), operand(g, bins, elem)), width)
    pos = g.op.Min(g.op.Cast(scaled, to=INT64), _i64(bins - 1))
    inside = g.op.And(g.op.GreaterOrEqual(x, low), g.op.LessOrEqual(x, high))
    index = g.op.Where(inside, pos, _i64(0))
    ones = g.op.Cast(inside, to=elem)
    return _scatter_add(g, _i64(bins), index, ones, outputs)


# aten::bincount.default
def aten_bincount(g, sts, outputs, self, weights=None, minlength=0):
    "bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor"
    elem = sts.dtype
    x = cast(g, self, INT64)
    top = g.op.ReduceMax(g.op.Concat(x, _i64(-1), axis=0), keepdims=1)
    if type(minlength) is str:
        minimum = g.op.Reshape(cast(g, minlength, INT64), _i64(1))
    else:
        minimum = _i64(minlength)
    size = g.op.Max(g.op.Add(top, _i64(1)), minimum)
    if weights is None:
        updates = g.op.Expand(operand(g, 1, elem), g.op.Shape(x))
    else:
        updates = cast(g, weights, elem)
    return _scatter_add(g, size, x, updates, outputs)


def _sorted_side(right: bool, side) -> bool:
    if side is not None and side not in ("left", "right"):
        raise UnsupportedError(f"searchsorted side={side!r}")
    if side == "left" and right:
        raise UnsupportedError("searchsorted with side='left' and right=True (torch rejects it)")
    return bool(right) or side == "right"


#: binary-search steps for a sequence of dynamic length (enough below 2**40 elements)
_DYNAMIC_STEPS = 40


# aten::searchsorted.Tensor, aten::searchsorted.Scalar
def aten_searchsorted(g, sts, outputs, sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
    "searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor"
    upper = _sorted_side(right, side)
    seq = sorted_sequence
    elem = g.get_type(seq)
    values = operand(g, self, elem)
    scalar = g.get_rank(values) == 0
    if scalar:
        values = g.op.Unsqueeze(values, _i64(0))
    position = _binary_search(g, seq, values, None if sorter is None else cast(g, sorter, INT64), upper)
    if scalar:
        position = g.op.Squeeze(position, _i64(0))
    return g.op.Cast(position, to=TensorProto.INT32 if out_int32 else INT64, outputs=outputs)


# aten::bucketize.Tensor, aten::bucketize.Scalar
def aten_bucketize(g, sts, outputs, self, boundaries, *, out_int32=False, right=False):
    "bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor"
    # the same kernel as searchsorted: right=False is its lower bound, right=True its upper
    return aten_searchsorted(g, sts, outputs, boundaries, self, out_int32=out_int32, right=right)


def _binary_search(g, seq: str, values: str, sorter, upper: bool) -> str:
    """torch's kernel step by step, unrolled: exact even where NaN breaks the order.

    Each step halves [start, end): ``mid_val = seq[sorter[mid]]``; the search moves right
    while ``!(mid_val >= v)`` (``>`` for right=True). A count of such elements would
    differ from it when the sequence holds NaN.
    """
    length = g.get_shape(seq)[-1]
    steps = length.bit_length() if type(length) is int else _DYNAMIC_STEPS
    one_d = g.get_rank(seq) == 1
    size = g.op.Shape(seq, start=-1)
    start = g.op.Expand(_i64(0), g.op.Shape(values))
    end = g.op.Expand(size, g.op.Shape(values))
    last = g.op.Sub(size, _i64(1))
    for _ in range(steps):
        mid = g.op.Add(start, g.op.Div(g.op.Sub(end, start), _i64(2)))
        index = g.op.Max(g.op.Min(mid, last), _i64(0))
        if sorter is not None:
            index = g.op.Gather(sorter, index, axis=0) if one_d else g.op.GatherElements(sorter, index, axis=-1)
        mid_val = g.op.Gather(seq, index, axis=0) if one_d else g.op.GatherElements(seq, index, axis=-1)
        stop = g.op.Greater(mid_val, values) if upper else g.op.GreaterOrEqual(mid_val, values)
        active = g.op.Less(start, end)
        start = g.op.Where(g.op.And(active, g.op.Not(stop)), g.op.Add(mid, _i64(1)), start)
        end = g.op.Where(g.op.And(active, stop), mid, end)
    return start


# aten::_unique2.default
def aten__unique2(g, sts, outputs, self, sorted=True, return_inverse=False, return_counts=False):
    "_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)"
    elem = g.get_type(self)
    # sorted=False: torch's CPU kernel sorts anyway ("always sort ... faster than hash table")
    if elem in (INT64, TensorProto.INT32, TensorProto.INT16, TensorProto.INT8, TensorProto.UINT8, BOOL):
        flat = g.op.Reshape(cast(g, self, INT64), _i64(-1))
        values, _first, inverse, counts = g.op.Unique(flat, sorted=1, outputs=4)
        values = g.op.Cast(values, to=elem)
    elif elem in _FLOATS or elem in (TensorProto.FLOAT16, TensorProto.BFLOAT16):
        values, inverse, counts = _unique_floats(g, g.op.Reshape(self, _i64(-1)))
    else:
        raise UnsupportedError(f"unique of ONNX element type {elem}")
    results = (
        values,
        g.op.Reshape(inverse, g.op.Shape(self)) if return_inverse else _empty(g),
        counts if return_counts else _empty(g),
    )
    return tuple(g.op.Identity(r, outputs=[o]) if o else "" for r, o in zip(results, outputs))


def _stable_order(g, key: str) -> str:
    """The permutation sorting ``key`` ascending, equal keys in input order (TopK's ties)."""
    _, order = g.op.TopK(key, g.op.Shape(key), largest=0, sorted=1, outputs=2)
    return order


def _unique_floats(g, flat: str) -> tuple[str, str, str]:
    """torch's unique of floats: a stable sort, then one entry per run of equal values.

    ONNX ``Unique`` orders NaN unlike torch; here NaN != NaN keeps every NaN its own entry,
    after every number, in input order (as torch's sort puts them), and each entry is the
    first of its run in input order (torch keeps 0.0 or -0.0, whichever comes first).
    """
    wide = cast(g, flat, TensorProto.DOUBLE if g.get_type(flat) == TensorProto.DOUBLE else TensorProto.FLOAT)
    nan = g.op.IsNaN(wide)
    # by value (NaN as +inf, tied with inf in input order), then NaN last keeping that order
    by_value = _stable_order(g, g.op.Where(nan, operand(g, float("inf"), g.get_type(wide)), wide))
    by_nan = _stable_order(g, g.op.Cast(g.op.Gather(nan, by_value, axis=0), to=TensorProto.FLOAT))
    order = g.op.Gather(by_value, by_nan, axis=0)
    ordered = g.op.Gather(wide, order, axis=0)
    previous = g.op.Slice(ordered, _i64(0), _i64(-1), _i64(0))
    starts = g.op.Concat(
        g.op.Slice(g.op.Expand(np.array(True), g.op.Shape(ordered)), _i64(0), _i64(1), _i64(0)),
        g.op.Not(g.op.Equal(g.op.Slice(ordered, _i64(1), _i64(2**62), _i64(0)), previous)),
        axis=0,
    )
    group = g.op.Sub(g.op.CumSum(g.op.Cast(starts, to=INT64), _i64(0)), _i64(1))
    values = g.op.Gather(flat, g.op.Compress(order, starts, axis=0), axis=0)
    inverse = g.op.ScatterElements(g.op.Expand(_i64(0), g.op.Shape(flat)), order, group, axis=0)
    ones = g.op.Expand(_i64(1), g.op.Shape(flat))
    counts = g.op.ScatterElements(_zeros(g, g.op.Shape(values), INT64), group, ones, axis=0, reduction="add")
    return values, inverse, counts


def _empty(g) -> str:
    return g.make_initializer("", np.zeros((0,), dtype=np.int64), dedup=False)


CONVERTERS = (
    Converter("aten::histc.default", aten_histc),
    Converter("aten::bincount.default", aten_bincount),
    Converter("aten::searchsorted.Tensor", aten_searchsorted),
    Converter("aten::searchsorted.Scalar", aten_searchsorted),
    Converter("aten::bucketize.Tensor", aten_bucketize),
    Converter("aten::bucketize.Scalar", aten_bucketize),
    Converter("aten::_unique2.default", aten__unique2),
)
