"""Tensor creation: zeros, ones, full, arange, *_like, scalar_tensor, tril/triu.

Filled tensors are ``Expand(scalar, shape)``: the model stays small whatever the size, and
a symbolic size stays symbolic. The element type is always the one torch recorded
(``sts.dtype``), so ``dtype=None`` and torch's default dtype need no special case.
Random ops (rand, randn, randint, bernoulli, ...) are left out on purpose: no runtime can
reproduce torch's numbers.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, is_float, numpy_dtype, operand, shape_tensor

_INT64 = TensorProto.INT64
_DOUBLE = TensorProto.DOUBLE
#: the type torch's CPU kernels compute arange in (at::acc_type<T, false>); int64 otherwise
_ACC = {
    TensorProto.FLOAT: TensorProto.DOUBLE,
    TensorProto.DOUBLE: TensorProto.DOUBLE,
    TensorProto.FLOAT16: TensorProto.FLOAT,
    TensorProto.BFLOAT16: TensorProto.FLOAT,
}
#: types Trilu lacks in onnxruntime, run on a type holding their values exactly
_TRILU_WIDE = {
    TensorProto.INT8: TensorProto.INT32,
    TensorProto.INT16: TensorProto.INT32,
    TensorProto.UINT8: TensorProto.INT32,
    TensorProto.UINT16: TensorProto.INT32,
    TensorProto.UINT32: TensorProto.INT64,
    TensorProto.BFLOAT16: TensorProto.FLOAT,
}


def scalar_value(value, elem: int) -> np.ndarray:
    """A python scalar as torch stores it in ``elem`` (float16 goes through float32 first)."""
    if elem in (TensorProto.FLOAT16, TensorProto.BFLOAT16) and not isinstance(value, bool):
        value = np.float32(value)
    return np.array(value, dtype=numpy_dtype(elem))


def _filled(g, value, elem: int, shape: str, outputs):
    """``value`` (python scalar or 0-d tensor) broadcast to ``shape`` in ``elem``."""
    if type(value) is str:
        return g.op.Expand(cast(g, value, elem), shape, outputs=outputs)
    return g.op.Expand(scalar_value(value, elem), shape, outputs=outputs)


# aten::zeros.default
def aten_zeros(g, sts, outputs, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    "zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _filled(g, 0, sts.dtype, shape_tensor(g, size), outputs)


# aten::ones.default
def aten_ones(g, sts, outputs, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    "ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _filled(g, 1, sts.dtype, shape_tensor(g, size), outputs)


# aten::full.default
def aten_full(
    g, sts, outputs, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _filled(g, fill_value, sts.dtype, shape_tensor(g, size), outputs)


# aten::empty.memory_format
def aten_empty(
    g,
    sts,
    outputs,
    size,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    memory_format=None,
):
    "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"
    # the content is undefined: zeros are as good as anything
    return _filled(g, 0, sts.dtype, shape_tensor(g, size), outputs)


# aten::empty_strided.default
def aten_empty_strided(
    g, sts, outputs, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _filled(g, 0, sts.dtype, shape_tensor(g, size), outputs)


# aten::zeros_like.default
def aten_zeros_like(
    g,
    sts,
    outputs,
    self,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    memory_format=None,
):
    "zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"
    return _filled(g, 0, sts.dtype, g.op.Shape(self), outputs)


# aten::ones_like.default
def aten_ones_like(
    g,
    sts,
    outputs,
    self,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    memory_format=None,
):
    "ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"
    return _filled(g, 1, sts.dtype, g.op.Shape(self), outputs)


# aten::full_like.default
def aten_full_like(
    g,
    sts,
    outputs,
    self,
    fill_value,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    memory_format=None,
):
    "full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"
    return _filled(g, fill_value, sts.dtype, g.op.Shape(self), outputs)


# aten::empty_like.default
def aten_empty_like(
    g,
    sts,
    outputs,
    self,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    memory_format=None,
):
    "empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"
    return _filled(g, 0, sts.dtype, g.op.Shape(self), outputs)


# aten::new_zeros.default
def aten_new_zeros(
    g, sts, outputs, self, size, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _filled(g, 0, sts.dtype, shape_tensor(g, size), outputs)


# aten::new_ones.default
def aten_new_ones(
    g, sts, outputs, self, size, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _filled(g, 1, sts.dtype, shape_tensor(g, size), outputs)


# aten::new_full.default
def aten_new_full(
    g,
    sts,
    outputs,
    self,
    size,
    fill_value,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
):
    "new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _filled(g, fill_value, sts.dtype, shape_tensor(g, size), outputs)


# aten::new_empty.default
def aten_new_empty(
    g, sts, outputs, self, size, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _filled(g, 0, sts.dtype, shape_tensor(g, size), outputs)


# aten::new_empty_strided.default
def aten_new_empty_strided(
    g, sts, outputs, self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _filled(g, 0, sts.dtype, shape_tensor(g, size), outputs)


# aten::scalar_tensor.default
def aten_scalar_tensor(
    g, sts, outputs, s, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    if type(s) is str:
        return g.op.Identity(cast(g, s, sts.dtype), outputs=outputs)
    return g.op.Identity(g.make_initializer("", scalar_value(s, sts.dtype)), outputs=outputs)


# aten::fill.Scalar
def aten_fill(g, sts, outputs, self, value):
    "fill.Scalar(Tensor self, Scalar value) -> Tensor"
    return _filled(g, value, sts.dtype, g.op.Shape(self), outputs)


# aten::zero.default
def aten_zero(g, sts, outputs, self):
    "zero(Tensor self) -> Tensor"
    return _filled(g, 0, sts.dtype, g.op.Shape(self), outputs)


# -- arange, linspace, eye ---------------------------------------------------------------------


def _arange_length(g, start, end, step, elem: int) -> str:
    """The number of values, computed as torch does (RangeFactories.cpp), as a 0-d int64."""
    if elem == _INT64:
        # int64: ceil((end - start + step - sign(step)) / step) on truncated integers
        start, end, step = (operand(g, v, _INT64) for v in (start, end, step))
        numerator = g.op.Sub(g.op.Add(g.op.Sub(end, start), step), g.op.Sign(step))
        return g.op.Div(numerator, step)
    start, end, step = (operand(g, v, _DOUBLE) for v in (start, end, step))
    return g.op.Cast(g.op.Ceil(g.op.Div(g.op.Sub(end, start), step)), to=_INT64)


def _is_integer(g, value) -> bool:
    if type(value) is str:
        return g.get_type(value) == _INT64
    return type(value) is int


def _arange(g, sts, outputs, start, end, step):
    """``start + step * i`` in the accumulation type torch's CPU kernel uses, then cast."""
    elem = sts.dtype
    if elem not in _ACC and all(_is_integer(g, v) for v in (start, end, step)):
        # integers: Range counts ceil((end - start) / step) values, exactly as torch does
        values = g.op.Range(*(operand(g, v, _INT64) for v in (start, end, step)))
        return g.op.Identity(cast(g, values, elem), outputs=outputs)
    length = sts.shape[0]
    if type(length) is not int:
        length = _arange_length(g, start, end, step, elem)
    acc = _ACC.get(elem, _INT64)
    if acc == _INT64 and not is_float(elem) and elem != TensorProto.BOOL:
        start, step = (int(v) if type(v) is not str else v for v in (start, step))
    values = g.op.Range(
        np.array(0, dtype=np.int64), operand(g, length, _INT64), np.array(1, dtype=np.int64)
    )
    values = cast(g, values, acc)
    if type(step) is str or step != 1:
        values = g.op.Mul(values, operand(g, step, acc))
    if type(start) is str or start != 0:
        values = g.op.Add(values, operand(g, start, acc))
    return g.op.Identity(cast(g, values, elem), outputs=outputs)


# aten::arange.default
def aten_arange(g, sts, outputs, end, *, dtype=None, layout=None, device=None, pin_memory=None):
    "arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _arange(g, sts, outputs, 0, end, 1)


# aten::arange.start
def aten_arange_start(
    g, sts, outputs, start, end, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _arange(g, sts, outputs, start, end, 1)


# aten::arange.start_step
def aten_arange_start_step(
    g, sts, outputs, start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _arange(g, sts, outputs, start, end, step)


# aten::linspace.default
def aten_linspace(
    g, sts, outputs, start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=None
):
    "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    elem = sts.dtype
    if not is_float(elem) or type(steps) is not int or str in (type(start), type(end)):
        # integer linspace truncates values whose rounding depends on torch's vector width
        raise UnsupportedError(
            "linspace is only supported for floating types and constant arguments."
        )
    first, last = scalar_value(start, elem), scalar_value(end, elem)
    if steps <= 1:
        return g.op.Identity(g.make_initializer("", np.full((steps,), first)), outputs=outputs)
    # torch (RangeFactoriesKernel.cpp): the first half counts from start, the second from end
    step = (last - first) / np.array(steps - 1, dtype=first.dtype)
    index = g.op.Range(np.array(0), np.array(steps), np.array(1))
    ahead = g.op.Add(first, g.op.Mul(step, cast(g, index, elem)))
    remaining = cast(g, g.op.Sub(np.array(steps - 1), index), elem)
    behind = g.op.Sub(last, g.op.Mul(step, remaining))
    first_half = g.op.Less(index, np.array(steps // 2))
    return g.op.Where(first_half, ahead, behind, outputs=outputs)


def _eye(g, sts, outputs, n, m):
    rows = g.op.Range(np.array(0), operand(g, n, _INT64), np.array(1))
    cols = g.op.Range(np.array(0), operand(g, m, _INT64), np.array(1))
    equal = g.op.Equal(g.op.Unsqueeze(rows, np.array([1])), g.op.Unsqueeze(cols, np.array([0])))
    return g.op.Identity(cast(g, equal, sts.dtype), outputs=outputs)


# aten::eye.default
def aten_eye(g, sts, outputs, n, *, dtype=None, layout=None, device=None, pin_memory=None):
    "eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _eye(g, sts, outputs, n, n)


# aten::eye.m
def aten_eye_m(g, sts, outputs, n, m, *, dtype=None, layout=None, device=None, pin_memory=None):
    "eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    return _eye(g, sts, outputs, n, m)


# -- tril, triu --------------------------------------------------------------------------------


def _trilu(g, sts, outputs, self, diagonal, upper: int):
    k = operand(g, diagonal, _INT64)
    elem = sts.dtype
    wide = _TRILU_WIDE.get(elem)
    if wide is None:
        return g.op.Trilu(self, k, upper=upper, outputs=outputs)
    kept = g.op.Trilu(g.op.Cast(self, to=wide), k, upper=upper)
    return g.op.Cast(kept, to=elem, outputs=outputs)


# aten::tril.default
def aten_tril(g, sts, outputs, self, diagonal=0):
    "tril(Tensor self, SymInt diagonal=0) -> Tensor"
    return _trilu(g, sts, outputs, self, diagonal, 0)


# aten::triu.default
def aten_triu(g, sts, outputs, self, diagonal=0):
    "triu(Tensor self, SymInt diagonal=0) -> Tensor"
    return _trilu(g, sts, outputs, self, diagonal, 1)


CONVERTERS = (
    Converter("aten::zeros.default", aten_zeros),
    Converter("aten::ones.default", aten_ones),
    Converter("aten::full.default", aten_full),
    Converter("aten::empty.memory_format", aten_empty),
    Converter("aten::empty_strided.default", aten_empty_strided),
    Converter("aten::zeros_like.default", aten_zeros_like),
    Converter("aten::ones_like.default", aten_ones_like),
    Converter("aten::full_like.default", aten_full_like),
    Converter("aten::empty_like.default", aten_empty_like),
    Converter("aten::new_zeros.default", aten_new_zeros),
    Converter("aten::new_ones.default", aten_new_ones),
    Converter("aten::new_full.default", aten_new_full),
    Converter("aten::new_empty.default", aten_new_empty),
    Converter("aten::new_empty_strided.default", aten_new_empty_strided),
    Converter("aten::scalar_tensor.default", aten_scalar_tensor),
    Converter("aten::fill.Scalar", aten_fill),
    Converter("aten::fill.Tensor", aten_fill),
    Converter("aten::fill_.Scalar", aten_fill),
    Converter("aten::fill_.Tensor", aten_fill),
    Converter("aten::zero.default", aten_zero),
    Converter("aten::zero_.default", aten_zero),
    Converter("aten::arange.default", aten_arange),
    Converter("aten::arange.start", aten_arange_start),
    Converter("aten::arange.start_step", aten_arange_start_step),
    Converter("aten::linspace.default", aten_linspace),
    Converter("aten::eye.default", aten_eye),
    Converter("aten::eye.m", aten_eye_m),
    Converter("aten::tril.default", aten_tril),
    Converter("aten::triu.default", aten_triu),
    Converter("aten::tril_.default", aten_tril),
    Converter("aten::triu_.default", aten_triu),
)
