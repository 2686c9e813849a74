"""Reductions, softmax, cumulative ops.

Conventions of this module:

- ``dim`` arguments are normalized by :func:`_prepare`; a 0-d input becomes 1-D so the
  ONNX reduction always has an axis (torch reduces a 0-d tensor to a 0-d tensor).
- float16/bfloat16 are reduced in float, as torch accumulates them, then cast back.
- onnxruntime's ReduceMax/ReduceMin/ArgMax skip NaN where torch propagates it: the
  float paths add the NaN explicitly (:func:`_with_nan`, :func:`_arg`).
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, is_float, named, operand

_HALF = (TensorProto.FLOAT16, TensorProto.BFLOAT16)
# Types onnxruntime's ReduceMax/ReduceMin/ArgMax lack; int32 holds them exactly.
_NARROW = (TensorProto.BOOL, TensorProto.INT16, TensorProto.UINT16)


def _acc_type(elem: int) -> int:
    """The type torch accumulates ``elem`` in: float for float16/bfloat16."""
    return TensorProto.FLOAT if elem in _HALF else elem


def _order_type(elem: int) -> int:
    """A type ONNX max/min/arg ops compare ``elem`` in, without rounding any value."""
    if elem in _HALF:
        return TensorProto.FLOAT
    if elem in _NARROW:
        return TensorProto.INT32
    return elem


def _prepare(g, x: str, dim, keepdim: bool) -> tuple[str, list[int], bool]:
    """(x, sorted axes, keepdims) for reducing ``x`` over ``dim``.

    ``dim`` None or empty means every dimension (torch's rule for sum, mean, amax...).
    A 0-d ``x`` is reshaped to 1-D and reduced over axis 0 without keepdims.
    """
    rank = g.get_rank(x)
    if rank == 0:
        return g.op.Reshape(x, [1]), [0], False
    if dim is None:
        return x, list(range(rank)), keepdim
    dims = [dim] if type(dim) is int else list(dim)
    if not dims:
        return x, list(range(rank)), keepdim
    return x, sorted({d % rank for d in dims}), keepdim


def _reduce(g, op_type: str, x: str, axes: list[int], keep: bool) -> str:
    return g.make_node(op_type, [x, g.make_initializer("", np.array(axes, dtype=np.int64))], keepdims=int(keep))


def _with_nan(g, x: str, value: str, axes: list[int], keep: bool) -> str:
    """``value`` where no NaN is reduced, NaN elsewhere (``x`` and ``value`` of a float type)."""
    nan = g.op.Cast(g.op.IsNaN(x), to=TensorProto.UINT8)
    has_nan = g.op.Cast(_reduce(g, "ReduceMax", nan, axes, keep), to=TensorProto.BOOL)
    return g.op.Where(has_nan, operand(g, math.nan, g.get_type(value)), value)


def _extremum(g, op_type: str, x: str, axes: list[int], keep: bool) -> str:
    """ReduceMax/ReduceMin of ``x``, NaN propagating, in the type of ``x``."""
    elem = g.get_type(x)
    xo = cast(g, x, _order_type(elem))
    value = _reduce(g, op_type, xo, axes, keep)
    if is_float(elem):
        value = _with_nan(g, xo, value, axes, keep)
    return cast(g, value, elem)


def _arg(g, op_type: str, x: str, axis: int, keep: bool) -> str:
    """ArgMax/ArgMin: first occurrence, and the first NaN wins, as in torch."""
    elem = g.get_type(x)
    xo = cast(g, x, _order_type(elem))
    index = g.make_node(op_type, [xo], axis=axis, keepdims=int(keep), select_last_index=0)
    if not is_float(elem):
        return index
    nan = g.op.Cast(g.op.IsNaN(xo), to=TensorProto.UINT8)
    first_nan = g.op.ArgMax(nan, axis=axis, keepdims=int(keep), select_last_index=0)
    has_nan = g.op.Cast(_reduce(g, "ReduceMax", nan, [axis], keep), to=TensorProto.BOOL)
    return g.op.Where(has_nan, first_nan, index)


def _accumulate(g, op_type: str, sts, self: str, dim, keepdim: bool) -> str:
    """sum/mean/prod: cast to the result type (torch's dtype=), reduce, cast back."""
    elem = sts.dtype
    x, axes, keep = _prepare(g, self, dim, keepdim)
    value = _reduce(g, op_type, cast(g, cast(g, x, elem), _acc_type(elem)), axes, keep)
    return cast(g, value, elem)


# aten::sum.default
def aten_sum(g, sts, outputs, self, dtype=None):
    "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"
    return named(g, _accumulate(g, "ReduceSum", sts, self, None, False), outputs[0])


# aten::sum.dim_IntList
def aten_sum_dim_intlist(g, sts, outputs, self, dim, keepdim=False, dtype=None):
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
    return named(g, _accumulate(g, "ReduceSum", sts, self, dim, keepdim), outputs[0])


# aten::nansum.default
def aten_nansum(g, sts, outputs, self, dim=None, keepdim=False, dtype=None):
    "nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
    if dim is not None and len(dim) == 0 and g.get_rank(self) > 0:
        raise UnsupportedError(
            "nansum with dim=[]: torch's kernel reduces every dimension but its meta function "
            "(the exported shape) reduces none; pass dim=None."
        )
    elem = sts.dtype
    x, axes, keep = _prepare(g, self, dim, keepdim)
    x = cast(g, cast(g, x, elem), _acc_type(elem))
    if is_float(elem):
        x = g.op.Where(g.op.IsNaN(x), operand(g, 0, _acc_type(elem)), x)
    return named(g, cast(g, _reduce(g, "ReduceSum", x, axes, keep), elem), outputs[0])


def _count_nonzero(g, self: str, dim) -> str:
    x, axes, _ = _prepare(g, self, dim, False)
    nonzero = cast(g, cast(g, x, TensorProto.BOOL), TensorProto.INT64)
    return _reduce(g, "ReduceSum", nonzero, axes, False)


# aten::mean.default
def aten_mean(g, sts, outputs, self, dtype=None):
    "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor"
    return named(g, _accumulate(g, "ReduceMean", sts, self, None, False), outputs[0])


# aten::mean.dim
def aten_mean_dim(g, sts, outputs, self, dim, keepdim=False, dtype=None):
    "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
    return named(g, _accumulate(g, "ReduceMean", sts, self, dim, keepdim), outputs[0])


# aten::prod.default
def aten_prod(g, sts, outputs, self, dtype=None):
    "prod(Tensor self, *, ScalarType? dtype=None) -> Tensor"
    return named(g, _accumulate(g, "ReduceProd", sts, self, None, False), outputs[0])


# aten::prod.dim_int
def aten_prod_dim_int(g, sts, outputs, self, dim, keepdim=False, dtype=None):
    "prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
    return named(g, _accumulate(g, "ReduceProd", sts, self, dim, keepdim), outputs[0])


# aten::count_nonzero.default
def aten_count_nonzero(g, sts, outputs, self, dim=None):
    "count_nonzero(Tensor self, int? dim=None) -> Tensor"
    return named(g, _count_nonzero(g, self, dim), outputs[0])


# aten::count_nonzero.dim_IntList
def aten_count_nonzero_dim_intlist(g, sts, outputs, self, dim):
    "count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor"
    return named(g, _count_nonzero(g, self, dim), outputs[0])


# aten::amax.default
def aten_amax(g, sts, outputs, self, dim=(), keepdim=False):
    "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"
    x, axes, keep = _prepare(g, self, dim, keepdim)
    return named(g, _extremum(g, "ReduceMax", x, axes, keep), outputs[0])


# aten::amin.default
def aten_amin(g, sts, outputs, self, dim=(), keepdim=False):
    "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"
    x, axes, keep = _prepare(g, self, dim, keepdim)
    return named(g, _extremum(g, "ReduceMin", x, axes, keep), outputs[0])


# aten::aminmax.default
def aten_aminmax(g, sts, outputs, self, dim=None, keepdim=False):
    "aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)"
    x, axes, keep = _prepare(g, self, dim, keepdim)
    low, high = _extremum(g, "ReduceMin", x, axes, keep), _extremum(g, "ReduceMax", x, axes, keep)
    return named(g, low, outputs[0]), named(g, high, outputs[1])


# aten::max.default
def aten_max(g, sts, outputs, self):
    "max(Tensor self) -> Tensor"
    x, axes, _ = _prepare(g, self, None, False)
    return named(g, _extremum(g, "ReduceMax", x, axes, False), outputs[0])


# aten::min.default
def aten_min(g, sts, outputs, self):
    "min(Tensor self) -> Tensor"
    x, axes, _ = _prepare(g, self, None, False)
    return named(g, _extremum(g, "ReduceMin", x, axes, False), outputs[0])


def _extremum_dim(g, arg_op: str, self: str, dim: int, keepdim: bool) -> tuple[str, str]:
    """(values, indices): the values are gathered at the indices, so NaN comes with them."""
    x, axes, keep = _prepare(g, self, dim, keepdim)
    index = _arg(g, arg_op, x, axes[0], True)
    values = g.op.GatherElements(x, index, axis=axes[0])
    if keep:
        return values, index
    return g.op.Squeeze(values, axes), g.op.Squeeze(index, axes)


# aten::max.dim
def aten_max_dim(g, sts, outputs, self, dim, keepdim=False):
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
    values, indices = _extremum_dim(g, "ArgMax", self, dim, keepdim)
    return named(g, values, outputs[0]), named(g, indices, outputs[1])


# aten::min.dim
def aten_min_dim(g, sts, outputs, self, dim, keepdim=False):
    "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
    values, indices = _extremum_dim(g, "ArgMin", self, dim, keepdim)
    return named(g, values, outputs[0]), named(g, indices, outputs[1])


def _arg_reduce(g, sts, op_type: str, self: str, dim, keepdim: bool) -> str:
    if dim is None:
        index = _arg(g, op_type, g.op.Reshape(self, [-1]), 0, False)
        if keepdim and g.get_rank(self) > 0:
            return g.op.Reshape(index, list(sts.shape))
        return index
    x, axes, keep = _prepare(g, self, dim, keepdim)
    return _arg(g, op_type, x, axes[0], keep)


# aten::argmax.default
def aten_argmax(g, sts, outputs, self, dim=None, keepdim=False):
    "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"
    return named(g, _arg_reduce(g, sts, "ArgMax", self, dim, keepdim), outputs[0])


# aten::argmin.default
def aten_argmin(g, sts, outputs, self, dim=None, keepdim=False):
    "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"
    return named(g, _arg_reduce(g, sts, "ArgMin", self, dim, keepdim), outputs[0])


def _any_all(g, sts, op_type: str, self: str, dim, keepdim: bool) -> str:
    """any (ReduceMax) / all (ReduceMin) of ``self != 0``; the result is bool, or uint8."""
    x, axes, keep = _prepare(g, self, dim, keepdim)
    x = cast(g, x, TensorProto.BOOL)
    if g.main_opset < 20:
        # ReduceMax/ReduceMin accept bool from opset 20
        x = g.op.Cast(x, to=TensorProto.UINT8)
    return cast(g, _reduce(g, op_type, x, axes, keep), sts.dtype)


def _any_all_dims(g, sts, op_type: str, self: str, dim, keepdim: bool) -> str:
    if dim is not None and len(dim) == 0:
        # any.dims/all.dims with an empty list reduce nothing (unlike sum's empty list)
        return cast(g, cast(g, self, TensorProto.BOOL), sts.dtype)
    return _any_all(g, sts, op_type, self, dim, keepdim)


# aten::any.default
def aten_any(g, sts, outputs, self):
    "any(Tensor self) -> Tensor"
    return named(g, _any_all(g, sts, "ReduceMax", self, None, False), outputs[0])


# aten::any.dim
def aten_any_dim(g, sts, outputs, self, dim, keepdim=False):
    "any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"
    return named(g, _any_all(g, sts, "ReduceMax", self, dim, keepdim), outputs[0])


# aten::any.dims
def aten_any_dims(g, sts, outputs, self, dim=None, keepdim=False):
    "any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"
    return named(g, _any_all_dims(g, sts, "ReduceMax", self, dim, keepdim), outputs[0])


# aten::all.default
def aten_all(g, sts, outputs, self):
    "all(Tensor self) -> Tensor"
    return named(g, _any_all(g, sts, "ReduceMin", self, None, False), outputs[0])


# aten::_is_all_true.default
def aten__is_all_true(g, sts, outputs, self):
    "_is_all_true(Tensor self) -> Tensor"
    # torch._check_tensor_all's reduction (transformers' torch_compilable_check): all of a bool
    return named(g, _any_all(g, sts, "ReduceMin", self, None, False), outputs[0])


# aten::_is_any_true.default
def aten__is_any_true(g, sts, outputs, self):
    "_is_any_true(Tensor self) -> Tensor"
    return named(g, _any_all(g, sts, "ReduceMax", self, None, False), outputs[0])


# aten::all.dim
def aten_all_dim(g, sts, outputs, self, dim, keepdim=False):
    "all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"
    return named(g, _any_all(g, sts, "ReduceMin", self, dim, keepdim), outputs[0])


# aten::all.dims
def aten_all_dims(g, sts, outputs, self, dim=None, keepdim=False):
    "all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"
    return named(g, _any_all_dims(g, sts, "ReduceMin", self, dim, keepdim), outputs[0])


def _divisor(g, self: str, axes: list[int], correction, elem: int) -> str:
    """max(N - correction, 0) in ``elem``, N the count of elements of ``self`` reduced."""
    shape = g.get_shape(self)
    sizes = [shape[a] for a in axes] if shape else [1]
    if all(type(s) is int for s in sizes):
        return operand(g, max(math.prod(sizes) - correction, 0), elem)
    count = g.op.ReduceProd(g.op.Gather(g.op.Shape(self), np.array(axes, dtype=np.int64)), keepdims=0)
    count = g.op.Sub(g.op.Cast(count, to=elem), operand(g, correction, elem))
    return g.op.Max(count, operand(g, 0, elem))


def _moments(g, sts, self: str, dim, correction, keepdim: bool) -> tuple[str, str]:
    """(variance, mean) in the accumulation type, by two passes (mean, then squares)."""
    x, axes, keep = _prepare(g, self, dim, keepdim)
    acc = _acc_type(sts.dtype)
    x = cast(g, x, acc)
    mean = _reduce(g, "ReduceMean", x, axes, True)
    centered = g.op.Sub(x, mean)
    total = _reduce(g, "ReduceSum", g.op.Mul(centered, centered), axes, keep)
    correction = 1 if correction is None else correction
    variance = g.op.Div(total, _divisor(g, self, axes, correction, acc))
    if not keep:
        mean = g.op.Squeeze(mean, axes)
    return variance, mean


# aten::var.correction
def aten_var_correction(g, sts, outputs, self, dim=None, correction=None, keepdim=False):
    "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"
    variance, _ = _moments(g, sts, self, dim, correction, keepdim)
    return named(g, cast(g, variance, sts.dtype), outputs[0])


# aten::var.dim
def aten_var_dim(g, sts, outputs, self, dim, unbiased=True, keepdim=False):
    "var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"
    variance, _ = _moments(g, sts, self, dim, int(unbiased), keepdim)
    return named(g, cast(g, variance, sts.dtype), outputs[0])


# aten::std.correction
def aten_std_correction(g, sts, outputs, self, dim=None, correction=None, keepdim=False):
    "std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"
    variance, _ = _moments(g, sts, self, dim, correction, keepdim)
    return named(g, cast(g, g.op.Sqrt(variance), sts.dtype), outputs[0])


# aten::std.dim
def aten_std_dim(g, sts, outputs, self, dim, unbiased=True, keepdim=False):
    "std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"
    variance, _ = _moments(g, sts, self, dim, int(unbiased), keepdim)
    return named(g, cast(g, g.op.Sqrt(variance), sts.dtype), outputs[0])


# aten::var_mean.correction
def aten_var_mean_correction(g, sts, outputs, self, dim=None, correction=None, keepdim=False):
    "var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"
    variance, mean = _moments(g, sts, self, dim, correction, keepdim)
    return named(g, cast(g, variance, sts.dtype), outputs[0]), named(g, cast(g, mean, sts.dtype), outputs[1])


# aten::var_mean.dim
def aten_var_mean_dim(g, sts, outputs, self, dim, unbiased=True, keepdim=False):
    "var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"
    variance, mean = _moments(g, sts, self, dim, int(unbiased), keepdim)
    return named(g, cast(g, variance, sts.dtype), outputs[0]), named(g, cast(g, mean, sts.dtype), outputs[1])


# aten::std_mean.correction
def aten_std_mean_correction(g, sts, outputs, self, dim=None, correction=None, keepdim=False):
    "std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"
    variance, mean = _moments(g, sts, self, dim, correction, keepdim)
    return named(g, cast(g, g.op.Sqrt(variance), sts.dtype), outputs[0]), named(g, cast(g, mean, sts.dtype), outputs[1])


# aten::std_mean.dim
def aten_std_mean_dim(g, sts, outputs, self, dim, unbiased=True, keepdim=False):
    "std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"
    variance, mean = _moments(g, sts, self, dim, int(unbiased), keepdim)
    return named(g, cast(g, g.op.Sqrt(variance), sts.dtype), outputs[0]), named(g, cast(g, mean, sts.dtype), outputs[1])


# aten::logsumexp.default, aten::special_logsumexp.default
def aten_logsumexp(g, sts, outputs, self, dim, keepdim=False):
    "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor"
    elem = sts.dtype
    acc = _acc_type(elem)
    x, axes, keep = _prepare(g, self, dim, keepdim)
    x = cast(g, cast(g, x, elem), acc)
    # torch shifts by the max, replaced by 0 where it is infinite
    shift = _reduce(g, "ReduceMax", x, axes, True)
    shift = g.op.Where(g.op.IsInf(shift), operand(g, 0, acc), shift)
    total = _reduce(g, "ReduceSum", g.op.Exp(g.op.Sub(x, shift)), axes, keep)
    if not keep:
        shift = g.op.Squeeze(shift, axes)
    return named(g, cast(g, g.op.Add(g.op.Log(total), shift), elem), outputs[0])


def _vector_norm(g, elem: int, self: str, ord, dim, keepdim: bool) -> str:
    x, axes, keep = _prepare(g, self, dim, keepdim)
    acc = _acc_type(elem)
    x = cast(g, cast(g, x, elem), acc)
    ord = float(ord)
    if ord == 2:
        value = _reduce(g, "ReduceL2", x, axes, keep)
    elif ord == 1:
        value = _reduce(g, "ReduceL1", x, axes, keep)
    elif ord == math.inf:
        value = _extremum(g, "ReduceMax", g.op.Abs(x), axes, keep)
    elif ord == -math.inf:
        value = _extremum(g, "ReduceMin", g.op.Abs(x), axes, keep)
    elif ord == 0:
        nonzero = g.op.Cast(g.op.Not(g.op.Equal(x, operand(g, 0, acc))), to=acc)
        value = _reduce(g, "ReduceSum", nonzero, axes, keep)
    else:
        powered = g.op.Pow(g.op.Abs(x), operand(g, ord, acc))
        value = g.op.Pow(_reduce(g, "ReduceSum", powered, axes, keep), operand(g, 1.0 / ord, acc))
    return cast(g, value, elem)


# aten::linalg_vector_norm.default
def aten_linalg_vector_norm(g, sts, outputs, self, ord=2, dim=None, keepdim=False, dtype=None):
    "linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
    return named(g, _vector_norm(g, sts.dtype, self, ord, dim, keepdim), outputs[0])


# aten::norm.ScalarOpt_dim
def aten_norm_scalaropt_dim(g, sts, outputs, self, p, dim, keepdim=False):
    "norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor"
    return named(g, _vector_norm(g, sts.dtype, self, 2 if p is None else p, dim, keepdim), outputs[0])


# aten::norm.Scalar
def aten_norm_scalar(g, sts, outputs, self, p=2):
    "norm.Scalar(Tensor self, Scalar p=2) -> Tensor"
    return named(g, _vector_norm(g, sts.dtype, self, p, None, False), outputs[0])


# aten::cumsum.default, aten::cumsum_.default
def aten_cumsum(g, sts, outputs, self, dim, dtype=None):
    "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"
    elem = sts.dtype
    x = cast(g, self, elem)
    if g.get_rank(self) == 0:
        return named(g, x, outputs[0])
    value = g.op.CumSum(cast(g, x, _acc_type(elem)), np.array(dim, dtype=np.int64))
    return named(g, cast(g, value, elem), outputs[0])


def _scan_body(g, elem: int, prefix: str):
    """Scan body: (state, x_i) -> (state * x_i, state * x_i)."""
    body = g.make_subgraph()
    state = body.make_tensor_input(f"{prefix}_state_in", elem, None)
    item = body.make_tensor_input(f"{prefix}_item_in", elem, None)
    product = body.op.Mul(state, item)
    body.make_tensor_output(product, elem, None)
    body.make_tensor_output(body.op.Identity(product), elem, None)
    return body


# aten::cumprod.default, aten::cumprod_.default
def aten_cumprod(g, sts, outputs, self, dim, dtype=None):
    "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"
    elem = sts.dtype
    acc = _acc_type(elem)
    x = cast(g, cast(g, self, elem), acc)
    rank = g.get_rank(self)
    if rank == 0:
        return named(g, cast(g, x, elem), outputs[0])
    axis = dim % rank
    # a Scan multiplies in torch's order, so the products round exactly as torch's do
    shape = g.op.Shape(x)
    others = [i for i in range(rank) if i != axis]
    ones = g.op.Expand(operand(g, 1, acc), g.op.Gather(shape, np.array(others, dtype=np.int64)))
    final, products = g.make_node(
        "Scan",
        [ones, x],
        [g.unique_name(f"{outputs[0]}_final"), g.unique_name(f"{outputs[0]}_scan")],
        body=_scan_body(g, acc, outputs[0]),
        num_scan_inputs=1,
        scan_input_axes=[axis],
        scan_output_axes=[axis],
    )
    return named(g, cast(g, products, elem), outputs[0])


def _softmax(g, op_type: str, elem: int, self: str, dim: int) -> str:
    """Softmax/LogSoftmax on one axis (any axis: opset >= 13 has no flattening)."""
    x = cast(g, cast(g, self, elem), _acc_type(elem))
    rank = g.get_rank(self)
    if rank == 0:
        value = g.make_node(op_type, [g.op.Reshape(x, [1])], axis=0)
        return cast(g, g.op.Reshape(value, np.array([], dtype=np.int64)), elem)
    axis = dim % rank
    if axis < rank - 2:
        return cast(g, _softmax_3d(g, op_type, x, g.get_shape(self), axis), elem)
    return cast(g, g.make_node(op_type, [x], axis=axis), elem)


def _softmax_3d(g, op_type: str, x: str, shape, axis: int) -> str:
    """Softmax over ``axis`` with two or more dimensions after it, on ``x`` viewed as
    (before, axis, after): the same kernel on the same numbers. onnxruntime computes a
    softmax over an inner axis by moving that axis last and back; with several dimensions
    after it that is a generic transpose, with one a fast one. yolo11's box head, softmax
    over dim 1 of (1, 16, 4, 8400), one thread, onnxruntime 1.32: 10.8 ms as it is, 2.4 ms
    viewed as (1, 16, 33600). ``shape`` is ``x``'s (a cast's result may have none recorded)."""
    if all(type(d) is int for d in shape):
        view = [math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])]
        view_shape = g.make_initializer("", np.array(view, dtype=np.int64))
        back = g.make_initializer("", np.array(shape, dtype=np.int64))
    else:  # products, not -1: a -1 beside a 0 is ambiguous
        before, after = _shape_product(g, x, 0, axis), _shape_product(g, x, axis + 1, None)
        view_shape = g.op.Concat(before, g.op.Shape(x, start=axis, end=axis + 1), after, axis=0)
        back = g.op.Shape(x)
    # allowzero: a 0 in the shape is a 0-sized dimension, not "keep the input's"
    view = g.op.Reshape(x, view_shape, allowzero=1)
    return g.op.Reshape(g.make_node(op_type, [view], axis=1), back, allowzero=1)


def _shape_product(g, x: str, start: int, end: int | None) -> str:
    """(1,) int64: the product of ``x``'s dimensions ``start:end`` (1 when there are none)."""
    if end == start:
        return g.make_initializer("", np.array([1], dtype=np.int64))
    kwargs = {"start": start} if end is None else {"start": start, "end": end}
    return g.op.ReduceProd(g.op.Shape(x, **kwargs), keepdims=1)


# aten::_softmax.default
def aten__softmax(g, sts, outputs, self, dim, half_to_float):
    "_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"
    return named(g, _softmax(g, "Softmax", sts.dtype, self, dim), outputs[0])


# aten::softmax.int
def aten_softmax_int(g, sts, outputs, self, dim, dtype=None):
    "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"
    return named(g, _softmax(g, "Softmax", sts.dtype, self, dim), outputs[0])


# aten::_log_softmax.default
def aten__log_softmax(g, sts, outputs, self, dim, half_to_float):
    "_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"
    return named(g, _softmax(g, "LogSoftmax", sts.dtype, self, dim), outputs[0])


# aten::log_softmax.int
def aten_log_softmax_int(g, sts, outputs, self, dim, dtype=None):
    "log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"
    return named(g, _softmax(g, "LogSoftmax", sts.dtype, self, dim), outputs[0])


# aten::diff.default
def aten_diff(g, sts, outputs, self, n=1, dim=-1, prepend=None, append=None):
    "diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor"
    rank = g.get_rank(self)
    if rank == 0:
        raise UnsupportedError("diff of a 0-d tensor (torch rejects it too)")
    axes = np.array([dim % rank], dtype=np.int64)
    pieces = [cast(g, t, sts.dtype) for t in (prepend, self, append) if t is not None]
    x = g.op.Concat(*pieces, axis=int(axes[0])) if len(pieces) > 1 else pieces[0]
    # torch.diff of bools is "not equal", i.e. a logical xor
    op_type = "Xor" if sts.dtype == TensorProto.BOOL else "Sub"
    for _ in range(n):
        later = g.op.Slice(x, np.array([1], dtype=np.int64), np.array([2**62], dtype=np.int64), axes)
        earlier = g.op.Slice(x, np.array([0], dtype=np.int64), np.array([-1], dtype=np.int64), axes)
        x = g.make_node(op_type, [later, earlier])
    return g.op.Identity(x, outputs=outputs)


CONVERTERS = (
    Converter("aten::sum.default", aten_sum),
    Converter("aten::sum.dim_IntList", aten_sum_dim_intlist),
    Converter("aten::nansum.default", aten_nansum),
    Converter("aten::mean.default", aten_mean),
    Converter("aten::mean.dim", aten_mean_dim),
    Converter("aten::prod.default", aten_prod),
    Converter("aten::prod.dim_int", aten_prod_dim_int),
    Converter("aten::count_nonzero.default", aten_count_nonzero),
    Converter("aten::count_nonzero.dim_IntList", aten_count_nonzero_dim_intlist),
    Converter("aten::amax.default", aten_amax),
    Converter("aten::amin.default", aten_amin),
    Converter("aten::aminmax.default", aten_aminmax),
    Converter("aten::max.default", aten_max),
    Converter("aten::min.default", aten_min),
    Converter("aten::max.dim", aten_max_dim),
    Converter("aten::min.dim", aten_min_dim),
    Converter("aten::argmax.default", aten_argmax),
    Converter("aten::argmin.default", aten_argmin),
    Converter("aten::any.default", aten_any),
    Converter("aten::any.dim", aten_any_dim),
    Converter("aten::any.dims", aten_any_dims),
    Converter("aten::all.default", aten_all),
    Converter("aten::_is_all_true.default", aten__is_all_true),
    Converter("aten::_is_any_true.default", aten__is_any_true),
    Converter("aten::all.dim", aten_all_dim),
    Converter("aten::all.dims", aten_all_dims),
    Converter("aten::var.correction", aten_var_correction),
    Converter("aten::var.dim", aten_var_dim),
    Converter("aten::std.correction", aten_std_correction),
    Converter("aten::std.dim", aten_std_dim),
    Converter("aten::var_mean.correction", aten_var_mean_correction),
    Converter("aten::var_mean.dim", aten_var_mean_dim),
    Converter("aten::std_mean.correction", aten_std_mean_correction),
    Converter("aten::std_mean.dim", aten_std_mean_dim),
    Converter("aten::logsumexp.default", aten_logsumexp),
    Converter("aten::special_logsumexp.default", aten_logsumexp),
    Converter("aten::linalg_vector_norm.default", aten_linalg_vector_norm),
    Converter("aten::norm.ScalarOpt_dim", aten_norm_scalaropt_dim),
    Converter("aten::norm.Scalar", aten_norm_scalar),
    Converter("aten::diff.default", aten_diff),
    Converter("aten::cumsum.default", aten_cumsum),
    Converter("aten::cumsum_.default", aten_cumsum),
    Converter("aten::cumprod.default", aten_cumprod),
    Converter("aten::cumprod_.default", aten_cumprod),
    Converter("aten::_softmax.default", aten__softmax),
    Converter("aten::softmax.int", aten_softmax_int),
    Converter("aten::_log_softmax.default", aten__log_softmax),
    Converter("aten::log_softmax.int", aten_log_softmax_int),
)
