"""Creation and conversion prims: full, full_like, fill, scalar_tensor, iota, the empty
family, convert_element_type, copy_to and device_put.

A fill value is rounded to the result dtype the way torch casts a scalar (numpy's cast:
float to int truncates, non-zero to bool is True). ``empty*`` values are unspecified in
torch; they are zeros here. ``convert_element_type`` is ONNX ``Cast``, whose float to
integer conversion truncates toward zero as torch's does (values out of the target's
range are undefined in both).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, numpy_dtype, onnx_type_from_torch, shape_tensor

INT64 = TensorProto.INT64


def _scalar(value, elem: int) -> np.ndarray:
    if isinstance(value, complex):
        raise UnsupportedError(f"A complex fill value {value!r}: ONNX has no complex tensors here.")
    try:
        return np.array(value, dtype=numpy_dtype(elem))
    except OverflowError as e:
        raise UnsupportedError(f"Fill value {value!r} does not fit the result type: {e}") from e


def _filled(g, value, elem: int, shape: str, outputs) -> str:
    return g.op.Expand(_scalar(value, elem), shape, outputs=outputs)


# prims::full.default
def prims_full(g, sts, outputs, shape, fill_value, dtype, device, requires_grad):
    "full(SymInt[] shape, Scalar fill_value, *, ScalarType dtype, Device device, bool requires_grad) -> Tensor"
    return _filled(g, fill_value, sts.dtype, shape_tensor(g, list(shape)), outputs)


# prims::full_like.default
def prims_full_like(g, sts, outputs, a, fill_value, dtype, device, requires_grad):
    "full_like(Tensor a, Scalar fill_value, *, ScalarType dtype, Device device, bool requires_grad) -> Tensor"
    return _filled(g, fill_value, sts.dtype, g.op.Shape(a), outputs)


# prims::fill.default
def prims_fill(g, sts, outputs, self, value):
    "fill(Tensor self, Scalar value) -> Tensor"
    return _filled(g, value, sts.dtype, g.op.Shape(self), outputs)


# prims::scalar_tensor.default
def prims_scalar_tensor(g, sts, outputs, s, dtype=None, device=None):
    "scalar_tensor(Scalar s, *, ScalarType? dtype=None, Device? device=None) -> Tensor"
    return g.op.Identity(_scalar(s, sts.dtype), outputs=outputs)


# prims::empty.default
def prims_empty(g, sts, outputs, shape, dtype, device, requires_grad):
    "empty(SymInt[] shape, *, ScalarType dtype, Device device, bool requires_grad) -> Tensor"
    return _filled(g, 0, sts.dtype, shape_tensor(g, list(shape)), outputs)


# prims::empty_strided.default
def prims_empty_strided(g, sts, outputs, shape, strides, dtype, device, requires_grad):
    "empty_strided(SymInt[] shape, SymInt[] strides, *, ScalarType dtype, Device device, bool requires_grad) -> Tensor"
    return _filled(g, 0, sts.dtype, shape_tensor(g, list(shape)), outputs)


# prims::empty_permuted.default
def prims_empty_permuted(g, sts, outputs, shape, physical_layout, dtype, device, requires_grad):
    "empty_permuted(SymInt[] shape, int[] physical_layout, *, ScalarType dtype, Device device, bool requires_grad) -> Tensor"
    return _filled(g, 0, sts.dtype, shape_tensor(g, list(shape)), outputs)


# prims::iota.default
def prims_iota(g, sts, outputs, length, start, step, dtype, device, requires_grad):
    "iota(SymInt length, *, SymInt start, SymInt step, ScalarType dtype, Device device, bool requires_grad) -> Tensor"
    start_, step_, length_ = (_int64(g, v) for v in (start, step, length))
    if all(type(v) is int for v in (start, step, length)):
        limit = np.array(start + length * step, dtype=np.int64)
    else:
        limit = g.op.Add(start_, g.op.Mul(length_, step_))
    values = g.op.Range(start_, limit, step_)
    if sts.dtype == INT64:
        return g.op.Identity(values, outputs=outputs)
    return g.op.Cast(values, to=sts.dtype, outputs=outputs)


def _int64(g, value):
    if type(value) is int:
        return np.array(value, dtype=np.int64)
    return cast(g, value, INT64)


# prims::convert_element_type.default
def prims_convert_element_type(g, sts, outputs, a, dtype):
    "convert_element_type(Tensor a, ScalarType dtype) -> Tensor"
    to = onnx_type_from_torch(dtype)
    if g.get_type(a) == to:
        return a
    return g.op.Cast(a, to=to, outputs=outputs)


# prims::copy_to.default
def prims_copy_to(g, sts, outputs, a, b):
    "copy_to(Tensor(a!) a, Tensor b) -> Tensor(a!)"
    # b's values in a's dtype and shape (torch checks the numbers of elements match, so
    # the shapes differ by size-1 dims only); the interpreter rebinds ``a`` to the result
    values = cast(g, b, sts.dtype)
    if g.get_shape(b) == g.get_shape(a):
        return g.op.Identity(values, outputs=outputs)
    return g.op.Reshape(values, g.op.Shape(a), outputs=outputs)


# prims::device_put.default
def prims_device_put(g, sts, outputs, a, device, non_blocking=False):
    "device_put(Tensor a, Device device, bool non_blocking=False) -> Tensor"
    return a


CONVERTERS = (
    Converter("prims::full.default", prims_full),
    Converter("prims::full_like.default", prims_full_like),
    Converter("prims::fill.default", prims_fill),
    Converter("prims::scalar_tensor.default", prims_scalar_tensor),
    Converter("prims::empty.default", prims_empty),
    Converter("prims::empty_strided.default", prims_empty_strided),
    Converter("prims::empty_permuted.default", prims_empty_permuted),
    Converter("prims::iota.default", prims_iota),
    Converter("prims::convert_element_type.default", prims_convert_element_type),
    Converter("prims::copy_to.default", prims_copy_to),
    Converter("prims::device_put.default", prims_device_put),
)
