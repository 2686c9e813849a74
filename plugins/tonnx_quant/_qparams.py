"""Quantization parameters and the two ways to write (de)quantization in ONNX.

- The **QDQ form** (``QuantizeLinear``/``DequantizeLinear`` with constant scales and zero
  points) is what onnxruntime fuses into its integer kernels (QLinearConv, QGemm, ...) and
  what OpenVINO reads as a quantized model. It is chosen when the parameters are constants
  (static post-training quantization, QAT after ``convert_pt2e``).
- The **exact form** (``Mul``, ``Round``, ``Add``, ``Clip``, ``Cast``) repeats torch's
  reference ops step by step, in torch's dtypes. It is chosen when a parameter is computed
  at run time (dynamic quantization: no runtime fuses that form anyway) and where the QDQ
  form is not the same function (a type the target opset's ``QuantizeLinear`` lacks, float8,
  which torch rounds to integers first).

The one difference of the QDQ form: ONNX's ``QuantizeLinear`` divides by the scale, torch
multiplies by ``1 / scale`` rounded to float32. The two products differ in the last bit for
some inputs, and the rounded result by one step when that bit crosses a rounding tie (about
one element in a million on normal data; ``docs/quantization.md``). Rounding (half to even)
and saturation are torch's in both forms.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import UnsupportedError
from tonnx.converters import cast, numpy_dtype, onnx_type_from_torch

FLOAT = TensorProto.FLOAT
DOUBLE = TensorProto.DOUBLE
FLOAT16 = TensorProto.FLOAT16
INT64 = TensorProto.INT64

#: ONNX element types whose QuantizeLinear/DequantizeLinear saturate to the full range.
_INTEGER = (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16)
_FLOAT8 = (TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2)


def quant_type(dtype) -> int:
    """ONNX element type of a quantized torch dtype; a typed refusal for one ONNX lacks."""
    try:
        elem = onnx_type_from_torch(dtype)
    except KeyError:
        elem = None
    if elem not in (*_INTEGER, TensorProto.INT32, *_FLOAT8):
        raise UnsupportedError(
            f"Quantized dtype {dtype}: tonnx's quant pack converts int8, uint8, int16, uint16, "
            f"int32, float8_e4m3fn and float8_e5m2; quantize to one of those."
        )
    return elem


def dtype_range(dtype) -> tuple[int, int]:
    """The (min, max) torch's quantized_decomposed ops use for ``dtype``."""
    import torch

    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        return int(info.min), int(info.max)
    info = torch.iinfo(dtype)
    return info.min, info.max


def constant(g, value):
    """``value`` (a python number or a result name) as a numpy array, or None at run time."""
    if value is None:
        return None
    if type(value) is not str:
        return np.asarray(value)
    if g.is_constant(value):
        return np.asarray(g.get_constant(value))
    return None


def qdq_accepts(g, op_type: str, elem: int) -> bool:
    """True when ``op_type`` at the target opset takes quantized type ``elem``."""
    import onnx.defs
    from onnx import helper

    schema = onnx.defs.get_schema(op_type, g.main_opset)
    name = f"tensor({helper.tensor_dtype_to_string(elem).split('.')[-1].lower()})"
    quantized = schema.type_constraints[-1] if op_type == "QuantizeLinear" else schema.type_constraints[0]
    return name in quantized.allowed_type_strs


def as_float32_scale(scale: np.ndarray) -> np.ndarray | None:
    """``scale`` in float32 when that keeps its value (a float64 scale torch made from
    float32 numbers); None when float32 would round it (the exact form computes in float64)."""
    scale32 = scale.astype(np.float32)
    if scale.dtype != np.float32 and not np.array_equal(scale32.astype(scale.dtype), scale):
        return None
    return scale32


def zero_point_as(zero_point: np.ndarray | None, elem: int, shape) -> np.ndarray | None:
    """The zero point in the quantized type, or None when a value does not fit it."""
    if zero_point is None:
        return np.zeros(shape, dtype=numpy_dtype(elem))
    if elem in _FLOAT8:
        return zero_point.astype(numpy_dtype(elem)) if not np.any(zero_point) else None
    info = np.iinfo(numpy_dtype(elem))
    if np.any(zero_point < info.min) or np.any(zero_point > info.max):
        return None
    return zero_point.astype(numpy_dtype(elem)).reshape(shape)


def is_narrow(quant_min: int, quant_max: int, dtype) -> bool:
    """True when [quant_min, quant_max] is narrower than the dtype's range."""
    low, high = dtype_range(dtype)
    return quant_min > low or quant_max < high


def narrow_clip(g, q: str, quant_min: int, quant_max: int, elem: int, outputs) -> str:
    """The quantized result clamped to [quant_min, quant_max]: QuantizeLinear saturates to
    the type's range, torch clamps to the given one before the cast; rounding then
    saturation is monotonic, so clamping the integers afterwards gives torch's values."""
    kind = numpy_dtype(elem)
    return g.op.Clip(q, np.array(quant_min, kind), np.array(quant_max, kind), outputs=outputs)


def narrow_clip_supported(quant_min: int, quant_max: int, dtype, elem: int) -> bool:
    """onnxruntime's Clip runs int8 and uint8 (not int16): other narrow ranges go exact."""
    return not is_narrow(quant_min, quant_max, dtype) or elem in (TensorProto.INT8, TensorProto.UINT8)


def reciprocal_f32(g, scale) -> str:
    """float32(1 / scale) as torch makes it from ``scale.item()``: the division in float64
    (a python float), rounded to float32 when it multiplies a float32 tensor."""
    value = constant(g, scale)
    if value is not None:
        return g.make_initializer("", np.array(1.0 / float(value.reshape(())), dtype=np.float32))
    s = g.op.Reshape(cast(g, scale, DOUBLE), np.array([], dtype=np.int64))
    return g.op.Cast(g.op.Div(np.array(1.0, dtype=np.float64), s), to=FLOAT)


def scalar(g, value, elem: int = FLOAT) -> str:
    """A python number or a one-element tensor as a 0-d tensor of ``elem``: ``.item()``, then
    the operand torch's kernel casts a python scalar to (its opmath type)."""
    known = constant(g, value)
    if known is not None:
        return g.make_initializer("", np.array(known.reshape(()).item(), dtype=numpy_dtype(elem)))
    return g.op.Cast(g.op.Reshape(value, np.array([], dtype=np.int64)), to=elem)


def quantize_exact(g, x: str, inv_scale: str, zero_point: str, quant_min, quant_max, elem, outputs,
                   compute: int = FLOAT) -> str:
    """``clamp(round(x * inv_scale) + zero_point, quant_min, quant_max).to(dtype)`` in
    ``compute`` (float32, or float64 where torch promotes), torch's reference order."""
    kind = numpy_dtype(compute)
    y = g.op.Round(g.op.Mul(cast(g, x, compute), cast(g, inv_scale, compute)))
    y = g.op.Add(y, cast(g, zero_point, compute))
    y = g.op.Clip(y, np.array(quant_min, kind), np.array(quant_max, kind))
    return g.op.Cast(y, to=elem, outputs=outputs)


def promoted(*dtypes) -> int:
    """ONNX type of torch's promotion of tensor dtypes (torch.promote_types, pairwise)."""
    import torch

    found = dtypes[0]
    for d in dtypes[1:]:
        found = torch.promote_types(found, d)
    return onnx_type_from_torch(found)


def check_bounds(quant_min, quant_max, dtype) -> None:
    """torch's own check: a range outside the dtype's is an error there, so is it here."""
    low, high = dtype_range(dtype)
    if quant_min < low or quant_max > high or quant_min > quant_max:
        raise UnsupportedError(
            f"quant_min={quant_min}, quant_max={quant_max} is not inside {dtype}'s range "
            f"[{low}, {high}] (torch refuses it too); pass a range inside the dtype's."
        )


def dequantize_exact(g, x: str, scale: str, zero_point: str | None, out: int, outputs, shape=None) -> str:
    """``((x - zero_point) * scale).to(out)`` with torch's promotions of the three tensors
    (int8 - int64 is int64, times a float64 scale is float64); ``shape`` reshapes the
    parameters to broadcast along their axis."""
    from tonnx.converters import named, torch_dtype

    def param(name):
        return name if shape is None else g.op.Reshape(name, np.array(shape, dtype=np.int64))

    y, elem = x, g.get_type(x)
    if zero_point is not None:
        elem = promoted(torch_dtype(elem), torch_dtype(g.get_type(zero_point)))
        y = g.op.Sub(cast(g, y, elem), cast(g, param(zero_point), elem))
    elem = promoted(torch_dtype(elem), torch_dtype(g.get_type(scale)))
    y = g.op.Mul(cast(g, y, elem), cast(g, param(scale), elem))
    if elem != out:
        return g.op.Cast(y, to=out, outputs=outputs) if outputs else g.op.Cast(y, to=out)
    return named(g, y, outputs[0]) if outputs else y


def reciprocal(g, scale: str) -> str:
    """``1 / scale`` rounded once in the scale's type, as torch's ``1.0 / scale``, in a form
    no pass turns into ``x / scale`` (which rounds differently at a tie): tonnx's peephole
    rewrites ``Mul(x, Reciprocal(s))`` and onnxruntime's DivMulFusion ``Mul(x, Div(1, s))``
    into ``Div(x, s)``. A float32 scale is inverted in float64 and rounded to float32, which
    is the correctly rounded float32 reciprocal (53 >= 2 * 24 + 2 bits: double rounding is
    innocuous for a quotient). A float64 scale has no wider type: ``Div(1, s)``, which
    onnxruntime fuses (docs/quantization.md, known gaps)."""
    if g.get_type(scale) == FLOAT:
        inverse = g.op.Div(np.array(1.0, dtype=np.float64), g.op.Cast(scale, to=DOUBLE))
        return g.op.Cast(inverse, to=FLOAT)
    return g.op.Div(np.array(1.0, dtype=numpy_dtype(g.get_type(scale))), scale)
