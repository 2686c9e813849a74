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


def _sum_of(g, sts, outputs, self, other, alpha, sign: int) -> str:
    """``self + sign * alpha * other``, either operand complex, real or a number."""
    part = _part_type(sts.dtype)
    a, b = _parts(g, self, sts.input_dtypes[0], part)
    c, d = _parts(g, other, sts.input_dtypes[1], part)
    if alpha != 1:  # torch multiplies other by alpha as complex numbers
        al = complex(alpha)
        x, y = np.array(al.real, dtype=numpy_dtype(part)), np.array(al.imag, dtype=numpy_dtype(part))
        c, d = g.op.Sub(g.op.Mul(c, x), g.op.Mul(d, y)), g.op.Add(g.op.Mul(c, y), g.op.Mul(d, x))
    combine = g.op.Add if sign > 0 else g.op.Sub
    real, imag = combine(a, c), combine(b, d)
    return _pair(g, _expand_like(g, real, imag), _expand_like(g, imag, real), outputs)


def _expand_like(g, x, other) -> str:
    """``x`` broadcast with ``other``: a part computed from a number or a smaller operand."""
    if type(other) is not str:
        return x
    shape = g.get_shape(x) if type(x) is str else None
    if shape is not None and shape == g.get_shape(other):
        return x
    return g.op.Expand(x, g.op.Shape(other))  # Expand broadcasts both ways


# aten::add.Tensor, aten::add.Scalar
def aten_add(g, sts, outputs, self, other, alpha=1):
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    return _sum_of(g, sts, outputs, self, other, alpha, 1)


# aten::sub.Tensor, aten::sub.Scalar
def aten_sub(g, sts, outputs, self, other, alpha=1):
    "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    return _sum_of(g, sts, outputs, self, other, alpha, -1)


# aten::neg.default
def aten_neg(g, sts, outputs, self):
    "neg(Tensor self) -> Tensor"
    return g.op.Neg(self, outputs=outputs)


# aten::div.Tensor, aten::div.Scalar
def aten_div(g, sts, outputs, self, other):
    "div.Tensor(Tensor self, Tensor other) -> Tensor"
    part = _part_type(sts.dtype)
    a, b = _parts(g, self, sts.input_dtypes[0], part)
    c, d = _parts(g, other, sts.input_dtypes[1], part)
    if type(c) is not str and type(d) is not str and float(d) == 0.0:
        # by a real number: torch's kernel divides both parts by it
        return _pair(g, _expand_like(g, g.op.Div(a, c), b), _expand_like(g, g.op.Div(b, c), a), outputs)
    # as torch's vectorized kernel: both operands scaled by max(|c|, |d|), no overflow
    scale = g.op.Max(g.op.Abs(c), g.op.Abs(d))
    a, b, c, d = (g.op.Div(v, scale) for v in (a, b, c, d))
    denominator = g.op.Add(g.op.Mul(c, c), g.op.Mul(d, d))
    real = g.op.Div(g.op.Add(g.op.Mul(a, c), g.op.Mul(b, d)), denominator)
    imag = g.op.Div(g.op.Sub(g.op.Mul(b, c), g.op.Mul(a, d)), denominator)
    return _pair(g, real, imag, outputs)


# aten::exp.default
def aten_exp(g, sts, outputs, self):
    "exp(Tensor self) -> Tensor"
    re, im = _component(g, self, 0), _component(g, self, 1)
    modulus = g.op.Exp(re)
    return _pair(g, g.op.Mul(modulus, g.op.Cos(im)), g.op.Mul(modulus, g.op.Sin(im)), outputs)


# aten::_conj.default
def aten__conj(g, sts, outputs, self):
    "_conj(Tensor(a) self) -> Tensor(a)"
    sign = np.array([1, -1], dtype=numpy_dtype(g.get_type(self)))
    return g.op.Mul(self, sign, outputs=outputs)


# aten::conj_physical.default
def aten_conj_physical(g, sts, outputs, self):
    "conj_physical(Tensor self) -> Tensor"
    return aten__conj(g, sts, outputs, self)


# aten::_conj_physical.default
def aten__conj_physical(g, sts, outputs, self):
    "_conj_physical(Tensor self) -> Tensor"
    return aten__conj(g, sts, outputs, self)


# aten::resolve_conj.default
def aten_resolve_conj(g, sts, outputs, self):
    "resolve_conj(Tensor(a) self) -> Tensor(a)"
    return named(g, self, outputs[0])  # pairs hold the values, never a lazy conj or neg bit


# aten::resolve_neg.default
def aten_resolve_neg(g, sts, outputs, self):
    "resolve_neg(Tensor(a) self) -> Tensor(a)"
    return named(g, self, outputs[0])


# aten::alias.default
def aten_alias(g, sts, outputs, self):
    "alias(Tensor(a) self) -> Tensor(a)"
    return named(g, self, outputs[0])


# -- reductions: over torch's axes, never the pair axis -----------------------------------------


def _reduce(g, sts, outputs, op_type: str, self, dim, keepdim, dtype) -> str:
    rank = _torch_rank(sts)
    axes = list(range(rank)) if not dim else sorted({d % max(rank, 1) for d in dim})
    part = _part_type(sts.dtype)
    x = cast(g, self, part)
    if rank == 0 or not axes:
        return named(g, x, outputs[0])
    return getattr(g.op, op_type)(x, _i64(axes), keepdims=int(keepdim), outputs=outputs)


# aten::sum.default
def aten_sum(g, sts, outputs, self, dtype=None):
    "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"
    return _reduce(g, sts, outputs, "ReduceSum", self, None, False, dtype)


# aten::sum.dim_IntList
def aten_sum_dim_intlist(g, sts, outputs, self, dim, keepdim=False, dtype=None):
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"  # noqa: E501
    return _reduce(g, sts, outputs, "ReduceSum", self, dim, keepdim, dtype)


# aten::mean.default
def aten_mean(g, sts, outputs, self, dtype=None):
    "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor"
    return _reduce(g, sts, outputs, "ReduceMean", self, None, False, dtype)


# aten::mean.dim
def aten_mean_dim(g, sts, outputs, self, dim, keepdim=False, dtype=None):
    "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"  # noqa: E501
    return _reduce(g, sts, outputs, "ReduceMean", self, dim, keepdim, dtype)


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


# aten::view_as.default
def aten_view_as(g, sts, outputs, self, other):
    "view_as(Tensor(a) self, Tensor other) -> Tensor(a)"
    target = (*sts.shape, 2)
    fallback = lambda: g.op.Concat(g.op.Shape(other, end=_torch_rank(sts, 1)), _i64([2]), axis=0)  # noqa: E731
    return named(g, _shape._reshape(g, self, target, fallback), outputs[0])


# aten::squeeze.dims
def aten_squeeze_dims(g, sts, outputs, self, dim):
    "squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)"
    return _squeeze(g, sts, outputs, self, dim)


# aten::squeeze.dim
def aten_squeeze_dim(g, sts, outputs, self, dim):
    "squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)"
    return _squeeze(g, sts, outputs, self, [dim])


# aten::squeeze.default
def aten_squeeze(g, sts, outputs, self):
    "squeeze(Tensor(a) self) -> Tensor(a)"
    return _squeeze(g, sts, outputs, self, None)


def _squeeze(g, sts, outputs, x: str, dims) -> str:
    shape = sts.input_shapes[0]
    rank = len(shape)
    candidates = range(rank) if dims is None else sorted({d % max(rank, 1) for d in dims})
    axes = [a for a in candidates if a < rank and shape[a] == 1]
    if rank - len(axes) != len(sts.shape):
        raise UnsupportedError(
            f"squeeze of {shape} over {dims}: torch squeezed a dimension whose size is "
            f"symbolic, which cannot be told apart statically."
        )
    return named(g, g.op.Squeeze(x, _i64(axes)) if axes else x, outputs[0])


# aten::select.int
def aten_select(g, sts, outputs, self, dim, index):
    "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"
    return _shape.aten_select(g, sts, outputs, self, dim % _torch_rank(sts), index)


# aten::narrow.default
def aten_narrow(g, sts, outputs, self, dim, start, length):
    "narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)"
    return _shape.aten_narrow(g, sts, outputs, self, dim % _torch_rank(sts), start, length)


# aten::split.Tensor
def aten_split(g, sts, outputs, self, split_size, dim=0):
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"
    return _shape.aten_split(g, sts, outputs, self, split_size, dim % _torch_rank(sts))


# aten::split_with_sizes.default
def aten_split_with_sizes(g, sts, outputs, self, split_sizes, dim=0):
    "split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]"
    return _shape.aten_split_with_sizes(g, sts, outputs, self, split_sizes, dim % _torch_rank(sts))


# aten::unbind.int
def aten_unbind(g, sts, outputs, self, dim=0):
    "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]"
    return _shape.aten_unbind(g, sts, outputs, self, dim % _torch_rank(sts))


# aten::flip.default
def aten_flip(g, sts, outputs, self, dims):
    "flip(Tensor self, int[] dims) -> Tensor"
    rank = _torch_rank(sts)
    if rank == 0:
        return named(g, self, outputs[0])
    return _shape.aten_flip(g, sts, outputs, self, [d % rank for d in dims])


# aten::roll.default
def aten_roll(g, sts, outputs, self, shifts, dims=()):
    "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor"
    rank = _torch_rank(sts)
    if dims:
        return _shape.aten_roll(g, sts, outputs, self, shifts, [d % rank for d in dims])
    # torch rolls the flattened tensor: here the pairs, [n, 2], along their first axis
    shape = sts.input_shapes[0]
    if all(type(d) is int for d in shape):
        size = int(np.prod(shape, dtype=np.int64))
    else:
        size = g.op.Div(g.op.Unsqueeze(g.op.Size(self), _i64([0])), _i64([2]))
    rolled = _shape._roll(g, g.op.Reshape(self, _i64([-1, 2])), size, shifts[0], 0)
    return g.op.Reshape(rolled, g.op.Shape(self), outputs=outputs)


# aten::stack.default
def aten_stack(g, sts, outputs, tensors, dim=0):
    "stack(Tensor[] tensors, int dim=0) -> Tensor"
    part = _part_type(sts.dtype)
    axis = dim % len(sts.shape)
    values = sts.input_values[0]
    items = [
        g.op.Unsqueeze(_as_pairs(g, t, onnx_type_from_torch(v.dtype), part), _i64([axis]))
        for t, v in zip(tensors, values)
    ]
    if len(items) == 1:
        return named(g, items[0], outputs[0])
    return g.op.Concat(*items, axis=axis, outputs=outputs)


# aten::where.self
def aten_where(g, sts, outputs, condition, self, other):
    "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor"
    part = _part_type(sts.dtype)
    a = _as_pairs(g, self, sts.input_dtypes[1], part)
    b = _as_pairs(g, other, sts.input_dtypes[2], part)
    return g.op.Where(g.op.Unsqueeze(condition, _i64([-1])), a, b, outputs=outputs)


def _zero_fill(value, op: str) -> None:
    if value and complex(value) != 0:
        raise UnsupportedError(
            f"{op} of a complex tensor with value={value!r}: tonnx pads complex values with "
            f"0 only. Pad torch.view_as_real(x) per part instead."
        )


# aten::constant_pad_nd.default
def aten_constant_pad_nd(g, sts, outputs, self, pad, value=0):
    "constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor"
    _zero_fill(value, "aten::constant_pad_nd")
    # torch's pad list runs from the last axis backwards: the pair axis, last, gets (0, 0)
    return _shape.aten_constant_pad_nd(g, sts, outputs, self, [0, 0, *pad], 0)


# aten::pad.default
def aten_pad(g, sts, outputs, self, pad, mode="constant", value=None):
    "pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor"
    _zero_fill(value, "aten::pad")
    return _shape.aten_pad(g, sts, outputs, self, [0, 0, *pad], mode, None)


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
    Converter("aten::add.Tensor", aten_add, complex=True),
    Converter("aten::add.Scalar", aten_add, complex=True),
    Converter("aten::sub.Tensor", aten_sub, complex=True),
    Converter("aten::sub.Scalar", aten_sub, complex=True),
    Converter("aten::neg.default", aten_neg, complex=True),
    Converter("aten::div.Tensor", aten_div, complex=True),
    Converter("aten::div.Scalar", aten_div, complex=True),
    Converter("aten::exp.default", aten_exp, complex=True),
    Converter("aten::_conj.default", aten__conj, complex=True),
    Converter("aten::conj_physical.default", aten_conj_physical, complex=True),
    Converter("aten::_conj_physical.default", aten__conj_physical, complex=True),
    Converter("aten::resolve_conj.default", aten_resolve_conj, complex=True),
    Converter("aten::resolve_neg.default", aten_resolve_neg, complex=True),
    Converter("aten::alias.default", aten_alias, complex=True),
    Converter("aten::sum.default", aten_sum, complex=True),
    Converter("aten::sum.dim_IntList", aten_sum_dim_intlist, complex=True),
    Converter("aten::mean.default", aten_mean, complex=True),
    Converter("aten::mean.dim", aten_mean_dim, complex=True),
    Converter("aten::view_as.default", aten_view_as, complex=True),
    Converter("aten::squeeze.default", aten_squeeze, complex=True),
    Converter("aten::squeeze.dim", aten_squeeze_dim, complex=True),
    Converter("aten::squeeze.dims", aten_squeeze_dims, complex=True),
    Converter("aten::select.int", aten_select, complex=True),
    Converter("aten::narrow.default", aten_narrow, complex=True),
    Converter("aten::split.Tensor", aten_split, complex=True),
    Converter("aten::split_with_sizes.default", aten_split_with_sizes, complex=True),
    Converter("aten::unbind.int", aten_unbind, complex=True),
    Converter("aten::flip.default", aten_flip, complex=True),
    Converter("aten::roll.default", aten_roll, complex=True),
    Converter("aten::stack.default", aten_stack, complex=True),
    Converter("aten::where.self", aten_where, complex=True),
    Converter("aten::constant_pad_nd.default", aten_constant_pad_nd, complex=True),
    Converter("aten::pad.default", aten_pad, complex=True),
    Converter("aten::cat.default", aten_cat, complex=True),
)
