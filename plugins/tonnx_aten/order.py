"""Order statistics and scans ONNX lacks: median, cummax, cummin, logcumsumexp.

- ``median`` is torch's lower median (element ``(n - 1) // 2`` of the sorted values),
  NaN when the reduced slice holds a NaN (index: the first NaN, as torch's kernel).
  ``TopK`` sorts stably, so among equal values the index is the one a stable sort puts
  there; torch documents its median index as "not necessarily the first occurrence".
- ``cummax``/``cummin`` compare each position with every earlier one (a triangular mask,
  quadratic in the scanned dimension): ONNX has no running maximum. Ties take the latest
  index and NaN propagates with the index of the latest NaN, as torch's kernel does.
- ``logcumsumexp`` is the log-sum-exp of each prefix, shifted by the prefix's maximum (the
  same triangle), with torch's -inf, inf and NaN results.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import is_float, numpy_dtype, operand

INT64 = TensorProto.INT64
_CARRIER = {
    TensorProto.FLOAT16: TensorProto.FLOAT,
    TensorProto.BFLOAT16: TensorProto.FLOAT,
    TensorProto.INT8: INT64,
    TensorProto.INT16: INT64,
    TensorProto.UINT8: INT64,
    TensorProto.BOOL: INT64,
}


def _i64(*values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _bound(g, results: tuple, outputs) -> tuple:
    """The results under the names the interpreter asked for (unused ones left out)."""
    return tuple(g.op.Identity(r, outputs=[o]) if o else "" for r, o in zip(results, outputs))


def _axis(g, x: str, dim: int) -> tuple[int, int]:
    rank = g.get_rank(x)
    if rank is None:
        raise UnsupportedError("median/cummax of an input of unknown rank")
    return (dim % rank if rank else 0), rank


def _median_along(g, x: str, axis: int, keep: bool) -> tuple[str, str]:
    """(values, indices) of the lower median along ``axis`` of ``x`` (rank >= 1)."""
    elem = g.get_type(x)
    carrier = _CARRIER.get(elem, elem)  # TopK's types in onnxruntime; the casts are exact
    if carrier != elem:
        value, index = _median_along(g, g.op.Cast(x, to=carrier), axis, keep)
        return g.op.Cast(value, to=elem), index
    size = g.op.Shape(x, start=axis, end=axis + 1)
    values, indices = g.op.TopK(x, size, axis=axis, largest=0, sorted=1, outputs=2)
    middle = g.op.Div(g.op.Sub(size, _i64(1)), _i64(2))
    value = g.op.Gather(values, middle, axis=axis)
    index = g.op.Gather(indices, middle, axis=axis)
    if is_float(elem):
        nan = g.op.IsNaN(x)
        has_nan = g.op.ReduceMax(g.op.Cast(nan, to=TensorProto.INT8), _i64(axis), keepdims=1)
        has_nan = g.op.Cast(has_nan, to=TensorProto.BOOL)
        first_nan = g.op.ArgMax(g.op.Cast(nan, to=TensorProto.INT8), axis=axis, keepdims=1, select_last_index=0)
        value = g.op.Where(has_nan, operand(g, float("nan"), elem), value)
        index = g.op.Where(has_nan, first_nan, index)
    if not keep:
        value, index = g.op.Squeeze(value, _i64(axis)), g.op.Squeeze(index, _i64(axis))
    return value, index


# aten::median.default
def aten_median(g, sts, outputs, self):
    "median(Tensor self) -> Tensor"
    flat = g.op.Reshape(self, _i64(-1))
    value, _ = _median_along(g, flat, 0, False)
    return g.op.Identity(value, outputs=outputs)


# aten::median.dim
def aten_median_dim(g, sts, outputs, self, dim, keepdim=False):
    "median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
    axis, rank = _axis(g, self, dim)
    if rank == 0:
        zero = g.op.Cast(g.op.Mul(g.op.Cast(self, to=INT64), np.array(0, dtype=np.int64)), to=INT64)
        return _bound(g, (self, zero), outputs)
    return _bound(g, _median_along(g, self, axis, keepdim), outputs)


def _lowest(elem: int, maximum: bool):
    """The value no element is below (cummax) or above (cummin)."""
    dtype = numpy_dtype(elem)
    if is_float(elem):
        return np.array(-np.inf if maximum else np.inf, dtype=dtype)
    if elem == TensorProto.BOOL:
        return np.array(not maximum, dtype=dtype)
    info = np.iinfo(dtype)
    return np.array(info.min if maximum else info.max, dtype=dtype)


def _running(g, sts, self: str, dim: int, maximum: bool) -> tuple[str, str]:
    elem = g.get_type(self)
    axis, rank = _axis(g, self, dim)
    if rank == 0:
        return g.op.Identity(self), g.op.Cast(g.op.Mul(g.op.Cast(self, to=INT64), np.array(0, dtype=np.int64)), to=INT64)
    x = g.op.Cast(self, to=TensorProto.INT32) if elem == TensorProto.BOOL else self
    work = g.get_type(x)
    # moved to the last axis: (..., n); window (..., i, j) holds x[j] for j <= i
    perm = [a for a in range(rank) if a != axis] + [axis]
    back = [int(a) for a in np.argsort(perm)]
    xt = g.op.Transpose(x, perm=perm) if axis != rank - 1 else x
    earlier, positions = _triangle(g, xt)
    rows = g.op.Unsqueeze(xt, _i64(-2))
    last = rank  # the window's last axis, counted from the front (onnxruntime 1.31.1 reduces
    # an empty tensor over a negative axis to the wrong shape)
    fill = _lowest(work, maximum)
    window = g.op.Where(earlier, rows, fill)
    if is_float(work):
        nan = g.op.IsNaN(window)
        window = g.op.Where(nan, fill, window)
    extreme = (g.op.ReduceMax if maximum else g.op.ReduceMin)(window, _i64(last), keepdims=1)
    hit = g.op.And(g.op.Equal(window, extreme), earlier)
    if is_float(work):
        any_nan = g.op.Cast(g.op.ReduceMax(g.op.Cast(nan, to=TensorProto.INT8), _i64(last), keepdims=1), to=TensorProto.BOOL)
        extreme = g.op.Where(any_nan, operand(g, float("nan"), work), extreme)
        hit = g.op.Or(g.op.And(any_nan, nan), g.op.And(g.op.Not(any_nan), hit))  # no bool Where in onnxruntime
    index = g.op.ReduceMax(g.op.Where(hit, positions, _i64(-1)), _i64(last), keepdims=0)
    value = g.op.Squeeze(extreme, _i64(-1))
    if axis != rank - 1:
        value, index = g.op.Transpose(value, perm=back), g.op.Transpose(index, perm=back)
    if work != elem:
        value = g.op.Cast(value, to=elem)
    return value, index


# aten::cummax.default
def aten_cummax(g, sts, outputs, self, dim):
    "cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)"
    return _bound(g, _running(g, sts, self, dim, True), outputs)


# aten::cummin.default
def aten_cummin(g, sts, outputs, self, dim):
    "cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)"
    return _bound(g, _running(g, sts, self, dim, False), outputs)


# aten::logcumsumexp.default
def aten_logcumsumexp(g, sts, outputs, self, dim):
    "logcumsumexp(Tensor self, int dim) -> Tensor"
    elem = sts.dtype
    if elem not in (TensorProto.FLOAT, TensorProto.DOUBLE):
        raise UnsupportedError(f"logcumsumexp of element type {elem} (float32 and float64 are converted)")
    axis, rank = _axis(g, self, dim)
    if rank == 0:
        return g.op.Identity(self, outputs=outputs)
    perm = [a for a in range(rank) if a != axis] + [axis]
    xt = g.op.Transpose(self, perm=perm) if axis != rank - 1 else self
    earlier, _ = _triangle(g, xt)
    last = rank  # the window's last axis, from the front (as in _running)
    window = g.op.Where(earlier, g.op.Unsqueeze(xt, _i64(-2)), operand(g, float("-inf"), elem))
    nan = g.op.IsNaN(window)
    any_nan = g.op.Cast(g.op.ReduceMax(g.op.Cast(nan, to=TensorProto.INT8), _i64(last), keepdims=0), to=TensorProto.BOOL)
    window = g.op.Where(nan, operand(g, float("-inf"), elem), window)
    # log(sum(exp(x - m))) + m with m the window's max, kept finite (-inf and inf windows)
    top = g.op.ReduceMax(window, _i64(last), keepdims=1)
    shift = g.op.Where(g.op.IsInf(top), operand(g, 0.0, elem), top)
    total = g.op.ReduceSum(g.op.Exp(g.op.Sub(window, shift)), _i64(last), keepdims=0)
    result = g.op.Add(g.op.Log(total), g.op.Squeeze(shift, _i64(-1)))
    result = g.op.Where(any_nan, operand(g, float("nan"), elem), result)
    if axis != rank - 1:
        result = g.op.Transpose(result, perm=[int(a) for a in np.argsort(perm)])
    return g.op.Identity(result, outputs=outputs)


def _triangle(g, xt: str) -> tuple[str, str]:
    """(mask (n, n): j <= i, positions 0..n-1) for the last axis of ``xt``."""
    n = g.op.Shape(xt, start=-1)
    positions = g.op.Range(np.array(0, dtype=np.int64), g.op.Squeeze(n, _i64(0)), np.array(1, dtype=np.int64))
    earlier = g.op.LessOrEqual(g.op.Unsqueeze(positions, _i64(0)), g.op.Unsqueeze(positions, _i64(1)))
    return earlier, positions


CONVERTERS = (
    Converter("aten::logcumsumexp.default", aten_logcumsumexp),
    Converter("aten::median.default", aten_median),
    Converter("aten::median.dim", aten_median_dim),
    Converter("aten::cummax.default", aten_cummax),
    Converter("aten::cummin.default", aten_cummin),
)
