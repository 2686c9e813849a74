"""Fake quantization (``aten::fake_quantize_per_*_affine*``): QAT's quantize-dequantize in
float, what a model prepared for quantization-aware training (before ``convert_pt2e``)
computes, and the observers of such a model (``_fused_moving_avg_obs_fq_helper``) once they
are turned off.

Constant parameters give ``QuantizeLinear`` + ``DequantizeLinear`` on the smallest integer
type that holds [quant_min, quant_max] (a ``Clip`` of the integers for a narrower range):
the QDQ form runtimes read as a quantized model. torch multiplies by ``float32(1 / scale)``
where QuantizeLinear divides: one step of difference where that crosses a rounding tie
(``_qparams``). Parameters computed at run time give torch's arithmetic op for op (exact).
torch's dequantization ``(q - zero_point) * scale`` is in double rounded to float32, which
is the float32 product DequantizeLinear computes (an integer times a float32 is exact in
double). NaN: torch casts it to an integer (undefined in C++), not compared.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import UnsupportedError
from tonnx.converters import Converter, cast

from ._qparams import FLOAT, constant, qdq_accepts, reciprocal

#: integer types a fake-quantized range is stored in for the QDQ form, smallest first
_STORAGE = ((TensorProto.UINT8, 0, 255), (TensorProto.INT8, -128, 127),
            (TensorProto.UINT16, 0, 65535), (TensorProto.INT16, -32768, 32767))


def _storage(g, quant_min: int, quant_max: int, zero_point: np.ndarray) -> tuple[int, bool] | None:
    """(ONNX type, narrow) holding the range and the zero points, or None."""
    for elem, low, high in _STORAGE:
        fits = low <= quant_min <= quant_max <= high and zero_point.min(initial=0) >= low and zero_point.max(initial=0) <= high
        if fits and qdq_accepts(g, "QuantizeLinear", elem):
            narrow = quant_min > low or quant_max < high
            if narrow and elem not in (TensorProto.UINT8, TensorProto.INT8):
                continue  # onnxruntime's Clip has no 16-bit kernel
            return elem, narrow
    return None


def _params(g, scale, zero_point):
    """(float32 scale, int64 zero point) when both are constants, else None."""
    s, z = constant(g, scale), constant(g, zero_point)
    if s is None or z is None:
        return None
    if z.dtype.kind == "f":
        raise UnsupportedError("fake quantization with a floating-point zero point (torch's learnable variant): tonnx converts integer zero points.")
    return s.astype(np.float32), z.astype(np.int64)


def _qdq(g, outputs, x, s, z, axis, quant_min, quant_max) -> str | None:
    found = _storage(g, quant_min, quant_max, z)
    if found is None:
        return None
    elem, narrow = found
    from tonnx.converters import numpy_dtype

    kind = numpy_dtype(elem)
    kw = {} if axis is None else {"axis": axis}
    shape = () if axis is None else s.shape
    zq = z.reshape(shape).astype(kind)
    q = g.op.QuantizeLinear(x, s.reshape(shape), zq, **kw)
    if narrow:
        q = g.op.Clip(q, np.array(quant_min, kind), np.array(quant_max, kind))
    return g.op.DequantizeLinear(q, s.reshape(shape), zq, **kw, outputs=[outputs[0]])


def _rounded(g, x, scale, zero_point, broadcast):
    """``zero_point + round(x * float32(1 / scale))`` in float32, torch's ``qval``."""
    s = g.op.Reshape(cast(g, scale, FLOAT), broadcast)
    y = g.op.Round(g.op.Mul(x, reciprocal(g, s)))
    return g.op.Add(y, g.op.Reshape(cast(g, zero_point, FLOAT), broadcast)), s


def fake_quantize(g, outputs, input, scale, zero_point, axis, quant_min, quant_max):
    """(output, mask) of torch's fake quantization; ``axis`` None for per-tensor."""
    if g.get_type(input) != FLOAT:
        raise UnsupportedError("fake quantization of a tensor that is not float32: torch's CPU kernel takes float32 only.")
    if quant_min > quant_max:
        raise UnsupportedError(f"quant_min={quant_min} > quant_max={quant_max} (torch refuses it too).")
    rank = g.get_rank(input)
    axis = None if axis is None else axis % rank
    broadcast = np.array([1] * rank if axis is None else [-1 if i == axis else 1 for i in range(rank)], dtype=np.int64)
    out = None
    params = _params(g, scale, zero_point)
    if outputs[0] and params is not None:
        out = _qdq(g, outputs, input, *params, axis, quant_min, quant_max)
    mask = ""
    if out is None or (len(outputs) > 1 and outputs[1]):
        qval, s = _rounded(g, input, scale, zero_point, broadcast)
        if out is None and outputs[0]:
            clamped = g.op.Clip(qval, np.float32(quant_min), np.float32(quant_max))
            zp = g.op.Reshape(cast(g, zero_point, FLOAT), broadcast)
            out = g.op.Mul(g.op.Sub(clamped, zp), s, outputs=[outputs[0]])
        if len(outputs) > 1 and outputs[1]:
            inside = g.op.And(g.op.GreaterOrEqual(qval, np.float32(quant_min)), g.op.LessOrEqual(qval, np.float32(quant_max)))
            mask = g.op.Identity(inside, outputs=[outputs[1]])
    return out or "", mask


# aten::fake_quantize_per_tensor_affine_cachemask.default
def aten_fake_quantize_per_tensor_affine_cachemask(g, sts, outputs, self, scale, zero_point, quant_min, quant_max):
    "fake_quantize_per_tensor_affine_cachemask(Tensor self, float scale, int zero_point, int quant_min, int quant_max) -> (Tensor output, Tensor mask)"  # noqa: E501
    s = g.make_initializer("", np.array(scale, dtype=np.float32))
    z = g.make_initializer("", np.array(zero_point, dtype=np.int64))
    return fake_quantize(g, outputs, self, s, z, None, quant_min, quant_max)


# aten::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default
def aten__fake_quantize_per_tensor_affine_cachemask_tensor_qparams(g, sts, outputs, self, scale, zero_point, fake_quant_enabled, quant_min, quant_max):  # noqa: E501
    "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams(Tensor self, Tensor scale, Tensor zero_point, Tensor fake_quant_enabled, int quant_min, int quant_max) -> (Tensor output, Tensor mask)"  # noqa: E501
    if not _enabled(g, fake_quant_enabled, "fake_quant_enabled"):
        return _passthrough(g, outputs, self)
    return fake_quantize(g, outputs, self, scale, zero_point, None, quant_min, quant_max)


# aten::fake_quantize_per_channel_affine_cachemask.default
def aten_fake_quantize_per_channel_affine_cachemask(g, sts, outputs, self, scale, zero_point, axis, quant_min, quant_max):
    "fake_quantize_per_channel_affine_cachemask(Tensor self, Tensor scale, Tensor zero_point, int axis, int quant_min, int quant_max) -> (Tensor output, Tensor mask)"  # noqa: E501
    return fake_quantize(g, outputs, self, scale, zero_point, axis, quant_min, quant_max)


def _enabled(g, flag: str, what: str) -> bool:
    value = constant(g, flag)
    if value is None:
        raise UnsupportedError(f"fake quantization whose {what} flag is computed at run time: tonnx converts a constant flag (a buffer of the model).")
    return bool(value.reshape(-1)[0])


def _passthrough(g, outputs, x):
    out = g.op.Identity(x, outputs=[outputs[0]]) if outputs[0] else ""
    mask = ""
    if len(outputs) > 1 and outputs[1]:
        mask = g.op.ConstantOfShape(g.op.Shape(x), value=np.array([True]), outputs=[outputs[1]])
    return out, mask


def _observer_qparams(g, running_min, running_max, scale, zero_point, quant_min, quant_max, ch_axis, per_row, symmetric):
    """The scale and zero point torch's helper computes from the running statistics when
    fake quantization is on (it chooses them again at every call, observer on or off):
    torch's own kernel run once at export on the constant statistics, so they are torch's."""
    import torch

    values = [constant(g, name) for name in (running_min, running_max, scale, zero_point)]
    if any(v is None for v in values):
        raise UnsupportedError("a QAT observer whose running statistics are computed at run time: tonnx converts them as buffers of the model.")
    lo, hi, s, z = (torch.from_numpy(np.array(v)) for v in values)
    dummy = torch.zeros([lo.numel() if per_row else 1, 1])  # the channels along axis 0
    out = torch.ops.aten._fused_moving_avg_obs_fq_helper_functional(
        dummy, torch.tensor([0]), torch.tensor([1]), lo, hi, s, z, 0.0, quant_min, quant_max, 0, per_row, symmetric)
    return (g.make_initializer("", out[4].numpy(force=True)), g.make_initializer("", out[5].numpy(force=True)))


# aten::_fused_moving_avg_obs_fq_helper_functional.default
def aten__fused_moving_avg_obs_fq_helper_functional(g, sts, outputs, self, observer_on, fake_quant_on, running_min, running_max, scale, zero_point, averaging_const, quant_min, quant_max, ch_axis, per_row_fake_quant=False, symmetric_quant=False):  # noqa: E501
    "_fused_moving_avg_obs_fq_helper_functional(Tensor self, Tensor observer_on, Tensor fake_quant_on, Tensor running_min, Tensor running_max, Tensor scale, Tensor zero_point, float averaging_const, int quant_min, int quant_max, int ch_axis, bool per_row_fake_quant=False, bool symmetric_quant=False) -> (Tensor output, Tensor mask, Tensor running_min, Tensor running_max, Tensor scale, Tensor zero_point)"  # noqa: E501
    if _enabled(g, observer_on, "observer_on"):
        raise UnsupportedError(
            "a QAT model whose observers are on (they update the scales at every call): turn them off before export "
            "(model.apply(torchao.quantization.pt2e.disable_observer)), or convert_pt2e the model.")
    if _enabled(g, fake_quant_on, "fake_quant_on"):
        scale, zero_point = _observer_qparams(g, running_min, running_max, scale, zero_point, quant_min, quant_max,
                                              ch_axis, per_row_fake_quant, symmetric_quant)
        out, mask = fake_quantize(g, outputs[:2], self, scale, zero_point, ch_axis if per_row_fake_quant else None,
                                  quant_min, quant_max)
    else:
        out, mask = _passthrough(g, outputs[:2], self)
    kept = [g.op.Identity(state, outputs=[name]) if name else "" for state, name in
            zip((running_min, running_max, scale, zero_point), outputs[2:])]
    return (out, mask, *kept)


CONVERTERS = (
    Converter("aten::fake_quantize_per_tensor_affine_cachemask.default", aten_fake_quantize_per_tensor_affine_cachemask),
    Converter("aten::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default",
              aten__fake_quantize_per_tensor_affine_cachemask_tensor_qparams),
    Converter("aten::fake_quantize_per_channel_affine_cachemask.default", aten_fake_quantize_per_channel_affine_cachemask),
    Converter("aten::_fused_moving_avg_obs_fq_helper_functional.default", aten__fused_moving_avg_obs_fq_helper_functional),
)
