"""Random ops: rand, randn, randint and their ``_like`` forms, normal, bernoulli.

Eval-mode models draw noise (ViT-MAE's random masking, UnivNet's and VITS's noise). ONNX's
RandomUniform/RandomNormal(Like) draw from the runtime's own generator: **the numbers never
match torch's**, only the distribution does (uniform on [low, high), normal with the given
mean and std, integers uniform on [low, high)), with torch's shape and dtype. The tests
check exactly that: shape, dtype, support and the moments over many samples.

``generator=`` (a ``torch.Generator`` torch.export lifts as a constant input) is refused:
its stream cannot be reproduced, and a model given one asks for numbers tonnx cannot
give. Call the op without it (the runtime's generator then draws), or pass the noise to the
model as an input.

Numbers are drawn in float32 or float64 (the types onnxruntime's kernels make) and cast to
float16/bfloat16; a value that rounds up to ``high`` there is moved to the largest value
below it, so the support stays [low, high) as torch's.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, is_float, numpy_dtype, operand, shape_tensor

FLOAT = TensorProto.FLOAT
DOUBLE = TensorProto.DOUBLE
INT64 = TensorProto.INT64
BOOL = TensorProto.BOOL


def _no_generator(generator, op: str) -> None:
    if generator is not None:
        raise UnsupportedError(
            f"{op} with generator=: ONNX's random ops draw from the runtime's generator, "
            "never a torch.Generator's stream. Call it without generator= (the exported "
            "graph then draws its own numbers) or pass the noise to the model as an input."
        )


def _draw_type(elem: int) -> int:
    """The type onnxruntime draws in: float64 stays, every other float goes through float32."""
    return DOUBLE if elem == DOUBLE else FLOAT


def _draw(g, kind: str, elem: int, size=None, like=None) -> str:
    """Standard uniform [0, 1) or normal (kind ``Uniform``/``Normal``) numbers in ``_draw_type``.

    ``size`` (ints and dynamic sizes) or ``like`` (a tensor whose shape is used) gives the shape.
    """
    dtype = _draw_type(elem)
    if like is None and all(type(d) is int for d in size):
        return g.make_node(f"Random{kind}", [], dtype=dtype, shape=list(size))
    if like is None:
        like = g.op.ConstantOfShape(shape_tensor(g, size))
    elif g.get_type(like) == TensorProto.BFLOAT16:  # not a type the Like ops take before opset 22
        like = g.op.ConstantOfShape(g.op.Shape(like))
    return g.make_node(f"Random{kind}Like", [like], dtype=dtype)


def _below(g, x: str, high: float, elem: int) -> str:
    """``x`` capped at the largest ``elem`` value below ``high``, in ``x``'s (wider) type.

    Capping before the cast to ``elem`` is enough: rounding is monotonic, so no value
    rounds up to ``high`` any more.
    """
    dtype = numpy_dtype(elem)
    limit = np.nextafter(np.array(high, dtype=dtype), np.array(-np.inf, dtype=dtype))
    return g.op.Min(x, operand(g, float(limit), g.get_type(x)))


def _uniform(g, elem: int, outputs, low=0.0, high=1.0, size=None, like=None) -> str:
    """Uniform floats on [low, high) in ``elem``: low + (high - low) * u, as torch computes them."""
    u = _draw(g, "Uniform", elem, size, like)
    if (low, high) != (0.0, 1.0):
        dtype = g.get_type(u)
        u = g.op.Add(g.op.Mul(u, operand(g, high - low, dtype)), operand(g, low, dtype))
    return g.op.Identity(cast(g, _below(g, u, high, elem), elem), outputs=outputs)


def _normal(g, elem: int, outputs, mean=0.0, std=1.0, size=None, like=None) -> str:
    """Normal floats of ``mean`` and ``std`` (numbers or tensors) in ``elem``."""
    z = _draw(g, "Normal", elem, size, like)
    dtype = g.get_type(z)
    if std != 1.0:
        z = g.op.Mul(z, cast(g, operand(g, std, dtype), dtype))
    if mean != 0.0:
        z = g.op.Add(z, cast(g, operand(g, mean, dtype), dtype))
    return g.op.Identity(cast(g, z, elem), outputs=outputs)


def _float_result(sts, op: str) -> int:
    if not is_float(sts.dtype):
        raise UnsupportedError(f"{op} of ONNX type {sts.dtype}: torch makes only floating types")
    return sts.dtype


def _integers(g, elem: int, outputs, low, high, size=None, like=None) -> str:
    """Integers uniform on [low, high): floor(u * (high - low)) + low, u a float64 in [0, 1).

    ``low``/``high`` are ints or 0-d int64 results (SymInts). For ranges wider than 2**53
    some integers are never drawn (float64's resolution): the distribution is still uniform
    to within 2**-53.
    """
    u = _draw(g, "Uniform", DOUBLE, size, like)
    low64, high64 = cast(g, operand(g, low, INT64), INT64), cast(g, operand(g, high, INT64), INT64)
    span = g.op.Sub(high64, low64)
    offset = g.op.Cast(g.op.Floor(g.op.Mul(u, cast(g, span, DOUBLE))), to=INT64)
    offset = g.op.Min(offset, g.op.Sub(span, np.array(1, dtype=np.int64)))
    return g.op.Cast(g.op.Add(offset, low64), to=elem, outputs=outputs)


# aten::rand.default
def aten_rand(g, sts, outputs, size, *, dtype=None, layout=None, device=None, pin_memory=None, generator=None):
    "rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    _no_generator(generator, "rand")
    return _uniform(g, _float_result(sts, "rand"), outputs, size=size)


# aten::randn.default
def aten_randn(g, sts, outputs, size, *, dtype=None, layout=None, device=None, pin_memory=None, generator=None):
    "randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    _no_generator(generator, "randn")
    return _normal(g, _float_result(sts, "randn"), outputs, size=size)


# aten::rand_like.default
def aten_rand_like(
    g, sts, outputs, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None, generator=None
):
    "rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"
    _no_generator(generator, "rand_like")
    return _uniform(g, _float_result(sts, "rand_like"), outputs, like=self)


# aten::randn_like.default
def aten_randn_like(
    g, sts, outputs, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None, generator=None
):
    "randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"
    _no_generator(generator, "randn_like")
    return _normal(g, _float_result(sts, "randn_like"), outputs, like=self)


# aten::randint.default
def aten_randint(g, sts, outputs, high, size, *, dtype=4, layout=None, device=None, pin_memory=None, generator=None):
    "randint(SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    _no_generator(generator, "randint")
    return _integers(g, sts.dtype, outputs, 0, high, size=size)


# aten::randint.low
def aten_randint_low(
    g, sts, outputs, low, high, size, *, dtype=4, layout=None, device=None, pin_memory=None, generator=None
):
    "randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    _no_generator(generator, "randint")
    return _integers(g, sts.dtype, outputs, low, high, size=size)


# aten::randint_like.default
def aten_randint_like(
    g, sts, outputs, self, high, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None,
    generator=None,
):
    "randint_like(Tensor self, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"
    _no_generator(generator, "randint_like")
    return _integers(g, sts.dtype, outputs, 0, high, like=self)


# aten::randint_like.low_dtype
def aten_randint_like_low_dtype(
    g, sts, outputs, self, low, high, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None,
    generator=None,
):
    "randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"
    _no_generator(generator, "randint_like")
    return _integers(g, sts.dtype, outputs, low, high, like=self)


# aten::normal.Tensor_float
def aten_normal_tensor_float(g, sts, outputs, mean, std=1.0, *, generator=None):
    "normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor"
    _no_generator(generator, "normal")
    return _normal(g, _float_result(sts, "normal"), outputs, mean, std, like=mean)


# aten::normal.float_Tensor
def aten_normal_float_tensor(g, sts, outputs, mean, std, *, generator=None):
    "normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor"
    _no_generator(generator, "normal")
    return _normal(g, _float_result(sts, "normal"), outputs, mean, std, like=std)


# aten::normal.Tensor_Tensor
def aten_normal_tensor_tensor(g, sts, outputs, mean, std, *, generator=None):
    "normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor"
    _no_generator(generator, "normal")
    size = list(sts.shape)  # the broadcast shape torch recorded: the draw must cover it
    if any(type(d) is not int for d in size):
        like = g.op.Add(g.op.Mul(mean, operand(g, 0, g.get_type(mean))), g.op.Mul(std, operand(g, 0, g.get_type(std))))
        return _normal(g, _float_result(sts, "normal"), outputs, mean, std, like=like)
    return _normal(g, _float_result(sts, "normal"), outputs, mean, std, size=size)


# aten::normal.float_float
def aten_normal_float_float(
    g, sts, outputs, mean, std, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None
):
    "normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    _no_generator(generator, "normal")
    return _normal(g, _float_result(sts, "normal"), outputs, mean, std, size=size)


# aten::normal_functional.default, aten::normal_.default
def aten_normal_functional(g, sts, outputs, self, mean=0.0, std=1.0, *, generator=None):
    "normal_functional(Tensor self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor"
    _no_generator(generator, "normal_")
    return _normal(g, _float_result(sts, "normal_"), outputs, mean, std, like=self)


# aten::uniform.default, aten::uniform_.default
def aten_uniform(g, sts, outputs, self, from_=0.0, to=1.0, *, generator=None):
    "uniform(Tensor self, float from=0., float to=1., *, Generator? generator=None) -> Tensor"
    # ``from`` is a python keyword: the parameter is ``from_`` (FX passes it by position)
    _no_generator(generator, "uniform_")
    return _uniform(g, _float_result(sts, "uniform_"), outputs, from_, to, like=self)


# aten::bernoulli.default
def aten_bernoulli(g, sts, outputs, self, *, generator=None):
    "bernoulli(Tensor self, *, Generator? generator=None) -> Tensor"
    _no_generator(generator, "bernoulli")
    return _bernoulli(g, sts, outputs, self, self)


# aten::bernoulli.p
def aten_bernoulli_p(g, sts, outputs, self, p, *, generator=None):
    "bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor"
    _no_generator(generator, "bernoulli")
    return _bernoulli(g, sts, outputs, self, p)


def _bernoulli(g, sts, outputs, self: str, p) -> str:
    """1 where u < p (u uniform on [0, 1), drawn in float64 so that p's float32 values count)."""
    u = _draw(g, "Uniform", DOUBLE, like=self)
    hit = g.op.Less(u, cast(g, operand(g, p, DOUBLE), DOUBLE))
    return g.op.Cast(hit, to=sts.dtype, outputs=outputs)


CONVERTERS = (
    Converter("aten::rand.default", aten_rand),
    Converter("aten::rand.generator", aten_rand),
    Converter("aten::randn.default", aten_randn),
    Converter("aten::randn.generator", aten_randn),
    Converter("aten::rand_like.default", aten_rand_like),
    Converter("aten::rand_like.generator", aten_rand_like),
    Converter("aten::randn_like.default", aten_randn_like),
    Converter("aten::randn_like.generator", aten_randn_like),
    Converter("aten::randint.default", aten_randint),
    Converter("aten::randint.generator", aten_randint),
    Converter("aten::randint.low", aten_randint_low),
    Converter("aten::randint.low_generator", aten_randint_low),
    Converter("aten::randint_like.default", aten_randint_like),
    Converter("aten::randint_like.generator", aten_randint_like),
    Converter("aten::randint_like.low_dtype", aten_randint_like_low_dtype),
    Converter("aten::randint_like.low_generator_dtype", aten_randint_like_low_dtype),
    Converter("aten::normal.Tensor_float", aten_normal_tensor_float),
    Converter("aten::normal.float_Tensor", aten_normal_float_tensor),
    Converter("aten::normal.Tensor_Tensor", aten_normal_tensor_tensor),
    Converter("aten::normal.float_float", aten_normal_float_float),
    Converter("aten::normal_functional.default", aten_normal_functional),
    Converter("aten::normal_.default", aten_normal_functional),
    Converter("aten::uniform.default", aten_uniform),
    Converter("aten::uniform_.default", aten_uniform),
    Converter("aten::bernoulli.default", aten_bernoulli),
    Converter("aten::bernoulli.p", aten_bernoulli_p),
)
