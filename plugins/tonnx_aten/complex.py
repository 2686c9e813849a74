"""Complex tensors: polar, view_as_complex/view_as_real, complex arithmetic and shape ops.

ONNX kernels take no complex tensors. As in onnxscript's torchlib, a complex value travels
between converters as a real tensor with a trailing dimension of 2 (real, imaginary): a
complex64 tensor of shape ``s`` is a float32 tensor of shape ``s + (2,)``, complex128 a
float64 one. The interpreter declares those types and shapes; ``sts`` keeps torch's
complex dtypes and shapes, which is how a converter knows which operands are complex.

Every converter here is registered with ``complex=True``: the interpreter converts a call
that reads or makes a complex value with these only, and refuses the others with a typed
error, so no real converter ever computes on the pair tensor. A dimension argument counts
torch's axes: a negative one is taken modulo torch's rank, never the pair's.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, named, numpy_dtype, onnx_type_from_torch, quadrant_atan, shape_tensor

from . import shape as _shape


BOOL = TensorProto.BOOL
DOUBLE = TensorProto.DOUBLE
#: complex ONNX type -> the type of its real and imaginary parts
PARTS = {TensorProto.COMPLEX64: TensorProto.FLOAT, TensorProto.COMPLEX128: DOUBLE}


# -- helpers ----------------------------------------------------------------------------------


def _i64(values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _part_type(elem: int) -> int:
    part = PARTS.get(elem)
    if part is None:
        raise UnsupportedError(f"ONNX type {elem} is not a complex type tonnx converts.")
    return part


def _component(g, x: str, index: int) -> str:
    """The real (0) or imaginary (1) part of a pair tensor [..., 2]."""
    return g.op.Gather(x, _i64(index), axis=-1)


def _parts(g, value, elem: int | None, part: int) -> tuple:
    """(real, imaginary) of an operand in ``part``: a pair tensor (``elem`` complex), a real
    tensor (imaginary part a 0 that broadcasts) or a python number."""
    if type(value) is not str:
        z = complex(value)
        return (
            np.array(z.real, dtype=numpy_dtype(part)),
            np.array(z.imag, dtype=numpy_dtype(part)),
        )
    if elem in PARTS:
        value = cast(g, value, part)
        return _component(g, value, 0), _component(g, value, 1)
    return cast(g, value, part), np.array(0, dtype=numpy_dtype(part))


def _pair(g, real: str, imag: str, outputs=1) -> str:
    """The pair tensor [..., 2] of two parts of the same shape."""
    last = _i64([-1])
    return g.op.Concat(
        g.op.Unsqueeze(real, last), g.op.Unsqueeze(imag, last), axis=-1, outputs=outputs
    )


def _as_pairs(g, x: str, elem: int | None, part: int) -> str:
    """Tensor ``x`` as a pair tensor in ``part``: a real one gets a zero imaginary part."""
    if elem in PARTS:
        return cast(g, x, part)
    rank = g.get_rank(x) + 1  # of the pair tensor
    x = g.op.Unsqueeze(cast(g, x, part), _i64([-1]))
    return g.op.Pad(x, _i64([0] * (2 * rank - 1) + [1]))


def _torch_rank(sts, i: int = 0) -> int:
    return len(sts.input_shapes[i])


# -- making and unmaking complex values --------------------------------------------------------


# aten::polar.default
def aten_polar(g, sts, outputs, abs, angle):
    "polar(Tensor abs, Tensor angle) -> Tensor"
    part = _part_type(sts.dtype)
    r, theta = cast(g, abs, part), cast(g, angle, part)
    return _pair(g, g.op.Mul(r, g.op.Cos(theta)), g.op.Mul(r, g.op.Sin(theta)), outputs)


# aten::complex.default
def aten_complex(g, sts, outputs, real, imag):
    "complex(Tensor real, Tensor imag) -> Tensor"
    part = _part_type(sts.dtype)
    re, im = cast(g, real, part), cast(g, imag, part)
    if g.get_shape(re) != g.get_shape(im):
        # torch broadcasts the two; Expand both to the common shape (exact, unlike re + 0 * im)
        re = g.op.Expand(re, g.op.Shape(im))
        im = g.op.Expand(im, g.op.Shape(re))
    return _pair(g, re, im, outputs)


# aten::view_as_complex.default
def aten_view_as_complex(g, sts, outputs, self):
    "view_as_complex(Tensor(a) self) -> Tensor(a)"
    return named(g, self, outputs[0])  # [..., 2] is already how a complex value is held


# aten::view_as_real.default
def aten_view_as_real(g, sts, outputs, self):
    "view_as_real(Tensor(a) self) -> Tensor(a)"
    return named(g, self, outputs[0])


# aten::real.default
def aten_real(g, sts, outputs, self):
    "real(Tensor(a) self) -> Tensor(a)"
    return g.op.Gather(self, _i64(0), axis=-1, outputs=outputs)


# aten::imag.default
def aten_imag(g, sts, outputs, self):
    "imag(Tensor(a) self) -> Tensor(a)"
    return g.op.Gather(self, _i64(1), axis=-1, outputs=outputs)


# -- arithmetic -------------------------------------------------------------------------------


# aten::mul.Tensor, aten::mul.Scalar
def aten_mul(g, sts, outputs, self, other):
    "mul.Tensor(Tensor self, Tensor other) -> Tensor"
    part = _part_type(sts.dtype)
    a, b = _parts(g, self, sts.input_dtypes[0], part)
    c, d = _parts(g, other, sts.input_dtypes[1], part)
    # torch promotes a real operand to complex (imaginary 0) and multiplies as complex
    # numbers: (ac - bd) + (ad + bc)i, so inf * 2 is inf + nan i there too
    real = g.op.Sub(g.op.Mul(a, c), g.op.Mul(b, d))
    imag = g.op.Add(g.op.Mul(a, d), g.op.Mul(b, c))
    return _pair(g, real, imag, outputs)


# aten::abs.default
def aten_abs(g, sts, outputs, self):
    "abs(Tensor self) -> Tensor"
    elem = sts.dtype
    re, im = _component(g, self, 0), _component(g, self, 1)
    if elem == TensorProto.FLOAT:
        # the squares and their sum are exact in float64: sqrt rounds once, no overflow
        re, im = cast(g, re, DOUBLE), cast(g, im, DOUBLE)
        modulus = g.op.Sqrt(g.op.Add(g.op.Mul(re, re), g.op.Mul(im, im)))
    else:
        modulus = _hypot(g, re, im)
    infinite = g.op.Or(g.op.IsInf(re), g.op.IsInf(im))  # hypot(inf, nan) is inf
    modulus = g.op.Where(infinite, np.array(math.inf, dtype=numpy_dtype(g.get_type(re))), modulus)
    if g.get_type(modulus) == elem:
        return named(g, modulus, outputs[0])
    return g.op.Cast(modulus, to=elem, outputs=outputs)


def _hypot(g, x: str, y: str) -> str:
    """sqrt(x² + y²) without overflow: m * sqrt(1 + (n / m)²), m = max(|x|, |y|)."""
    ax, ay = g.op.Abs(x), g.op.Abs(y)
    larger, smaller = g.op.Max(ax, ay), g.op.Min(ax, ay)
    ratio = g.op.Div(smaller, larger)
    scaled = g.op.Mul(larger, g.op.Sqrt(g.op.Add(g.op.Mul(ratio, ratio), 1.0)))
    result = g.op.Where(g.op.Equal(larger, 0.0), larger, scaled)
    return g.op.Where(g.op.Or(g.op.IsNaN(x), g.op.IsNaN(y)), g.op.Add(x, y), result)


# aten::angle.default
def aten_angle(g, sts, outputs, self):
    "angle(Tensor self) -> Tensor"
    # atan2(imaginary, real), with C's signed-zero and infinity cases
    re, im = _component(g, self, 0), _component(g, self, 1)
    return named(g, quadrant_atan(g, im, re), outputs[0])


# -- dtype conversions ------------------------------------------------------------------------


def _convert(g, sts, outputs, self) -> str:
    """``self`` (complex or real, ``sts.input_dtypes[0]``) in torch's result dtype."""
    source, target = sts.input_dtypes[0], sts.dtype
    if target in PARTS:
        return named(g, _as_pairs(g, self, source, PARTS[target]), outputs[0])
    re, im = _component(g, self, 0), _component(g, self, 1)
    if target == BOOL:  # nonzero when either part is
        return g.op.Not(g.op.And(g.op.Equal(re, 0.0), g.op.Equal(im, 0.0)), outputs=outputs)
    # to a real dtype torch keeps the real part (and warns that it discards the imaginary)
    return g.op.Cast(re, to=target, outputs=outputs)


# aten::_to_copy.default
def aten__to_copy(
    g,
    sts,
    outputs,
    self,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    memory_format=None,
):
    "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor"  # noqa: E501
    return _convert(g, sts, outputs, self)


# aten::to.dtype
def aten_to_dtype(g, sts, outputs, self, dtype, non_blocking=False, copy=False, memory_format=None):
    "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"  # noqa: E501
    return _convert(g, sts, outputs, self)


# aten::to.dtype_layout
def aten_to_dtype_layout(
    g,
    sts,
    outputs,
    self,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    copy=False,
    memory_format=None,
):
    "to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"  # noqa: E501
    return _convert(g, sts, outputs, self)


# aten::to.device
def aten_to_device(
    g, sts, outputs, self, device, dtype, non_blocking=False, copy=False, memory_format=None
):
    "to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"  # noqa: E501
    return _convert(g, sts, outputs, self)


# aten::type_as.default
def aten_type_as(g, sts, outputs, self, other):
    "type_as(Tensor self, Tensor other) -> Tensor"
    return _convert(g, sts, outputs, self)


# -- shape ops: torch's axes, the pair axis kept last -------------------------------------------


# aten::clone.default
def aten_clone(g, sts, outputs, self, memory_format=None):
    "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor"
    return named(g, self, outputs[0])


# aten::view.default, aten::_unsafe_view.default
def aten_view(g, sts, outputs, self, size):
    "view(Tensor(a) self, SymInt[] size) -> Tensor(a)"
    target = (*sts.shape, 2)
    return named(
        g, _shape._reshape(g, self, target, lambda: shape_tensor(g, [*size, 2])), outputs[0]
    )


# aten::reshape.default
def aten_reshape(g, sts, outputs, self, shape):
    "reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)"
    target = (*sts.shape, 2)
    return named(
        g, _shape._reshape(g, self, target, lambda: shape_tensor(g, [*shape, 2])), outputs[0]
    )


# aten::flatten.using_ints
def aten_flatten(g, sts, outputs, self, start_dim=0, end_dim=-1):
    "flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)"
    rank = max(_torch_rank(sts), 1)
    start, end = start_dim % rank, end_dim % rank

    def fallback():
        merged = g.op.ReduceProd(g.op.Shape(self, start=start, end=end + 1), keepdims=1)
        return g.op.Concat(
            g.op.Shape(self, end=start), merged, g.op.Shape(self, start=end + 1), axis=0
        )

    return named(g, _shape._reshape(g, self, (*sts.shape, 2), fallback), outputs[0])


# aten::unsqueeze.default
def aten_unsqueeze(g, sts, outputs, self, dim):
    "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"
    return _shape.aten_unsqueeze(g, sts, outputs, self, dim % (_torch_rank(sts) + 1))


# aten::transpose.int
def aten_transpose(g, sts, outputs, self, dim0, dim1):
    "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"
    rank = _torch_rank(sts)
    if rank < 2:
        return named(g, self, outputs[0])
    perm = list(range(rank + 1))
    a, b = dim0 % rank, dim1 % rank
    perm[a], perm[b] = perm[b], perm[a]
    return named(g, _shape._transpose(g, self, perm), outputs[0])


# aten::permute.default
def aten_permute(g, sts, outputs, self, dims):
    "permute(Tensor(a) self, int[] dims) -> Tensor(a)"
    rank = _torch_rank(sts)
    perm = [d % rank for d in dims] + [rank]
    return named(g, _shape._transpose(g, self, perm), outputs[0])


# aten::expand.default
def aten_expand(g, sts, outputs, self, size, implicit=False):
    "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)"
    lead = len(size) - _torch_rank(sts)
    # Expand broadcasts: 1 keeps the input's size (torch's -1), the pair axis included
    target = [1 if i >= lead and type(s) is int and s == -1 else s for i, s in enumerate(size)]
    if lead == 0 and all(t == 1 for t in target):
        return named(g, self, outputs[0])
    return g.op.Expand(self, shape_tensor(g, [*target, 1]), outputs=outputs)


# aten::slice.Tensor
def aten_slice(g, sts, outputs, self, dim=0, start=None, end=None, step=1):
    "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)"  # noqa: E501
    return _shape.aten_slice(g, sts, outputs, self, dim % _torch_rank(sts), start, end, step)


# aten::cat.default
def aten_cat(g, sts, outputs, tensors, dim=0):
    "cat(Tensor[] tensors, int dim=0) -> Tensor"
    part = _part_type(sts.dtype)
    values = sts.input_values[0]
    # torch skips 1-D empty tensors (of any dtype); the others are made complex
    kept = [
        _as_pairs(g, t, onnx_type_from_torch(v.dtype), part)
        for t, v in zip(tensors, values)
        if tuple(v.shape) != (0,)
    ]
    if not kept:
        return named(
            g, _as_pairs(g, tensors[0], onnx_type_from_torch(values[0].dtype), part), outputs[0]
        )
    if len(kept) == 1:
        return named(g, kept[0], outputs[0])
    return g.op.Concat(*kept, axis=dim % len(sts.shape), outputs=outputs)


CONVERTERS = (
    Converter("aten::polar.default", aten_polar, complex=True),
    Converter("aten::complex.default", aten_complex, complex=True),
    Converter("aten::view_as_complex.default", aten_view_as_complex, complex=True),
    Converter("aten::view_as_real.default", aten_view_as_real, complex=True),
    Converter("aten::real.default", aten_real, complex=True),
    Converter("aten::imag.default", aten_imag, complex=True),
    Converter("aten::mul.Tensor", aten_mul, complex=True),
    Converter("aten::mul.Scalar", aten_mul, complex=True),
    Converter("aten::abs.default", aten_abs, complex=True),
    Converter("aten::angle.default", aten_angle, complex=True),
    Converter("aten::_to_copy.default", aten__to_copy, complex=True),
    Converter("aten::to.dtype", aten_to_dtype, complex=True),
    Converter("aten::to.dtype_layout", aten_to_dtype_layout, complex=True),
    Converter("aten::to.device", aten_to_device, complex=True),
    Converter("aten::type_as.default", aten_type_as, complex=True),
    Converter("aten::clone.default", aten_clone, complex=True),
    Converter("aten::view.default", aten_view, complex=True),
    Converter("aten::_unsafe_view.default", aten_view, complex=True),
    Converter("aten::reshape.default", aten_reshape, complex=True),
    Converter("aten::flatten.using_ints", aten_flatten, complex=True),
    Converter("aten::unsqueeze.default", aten_unsqueeze, complex=True),
    Converter("aten::transpose.int", aten_transpose, complex=True),
    Converter("aten::permute.default", aten_permute, complex=True),
    Converter("aten::expand.default", aten_expand, complex=True),
    Converter("aten::slice.Tensor", aten_slice, complex=True),
    Converter("aten::cat.default", aten_cat, complex=True),
)
