"""Bit shifts (``x >> 2``, ``x << 1``, ``bitwise_left_shift``) with torch's exact semantics.

ONNX ``BitShift`` takes unsigned integers only, and a shift by the bit width or more is
undefined there. torch's CPU kernels define every case:

- ``<<``: the bits shifted as unsigned and wrapped; a shift below 0 or of the bit width or
  more gives 0;
- ``>>`` of a signed integer is arithmetic (the sign is copied in); a shift below 0 or of
  the bit width or more shifts by width - 1 (0 or -1 remains); of an unsigned one it
  gives 0.

Values go through int64 and uint64 (two's complement Casts); an arithmetic right shift is
``~(~x >> b)`` for negative ``x``.
"""

from __future__ import annotations

from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, operand

INT64, UINT64 = TensorProto.INT64, TensorProto.UINT64
#: integer type -> bit width
_WIDTH = {
    TensorProto.INT8: 8,
    TensorProto.INT16: 16,
    TensorProto.INT32: 32,
    TensorProto.INT64: 64,
    TensorProto.UINT8: 8,
    TensorProto.UINT16: 16,
    TensorProto.UINT32: 32,
    TensorProto.UINT64: 64,
}
_SIGNED = (TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64)


def _amount(g, other, width: int, right_signed: bool):
    """(int64 shift amount, int64-valid mask or None); a constant amount is settled now.

    Out-of-range amounts: an arithmetic right shift by width - 1, else a result of 0.
    """
    if type(other) is not str:
        b = int(other)
        if 0 <= b < width:
            return operand(g, b, INT64), None
        return (operand(g, width - 1, INT64), None) if right_signed else (None, False)
    b = cast(g, other, INT64)
    valid = g.op.And(g.op.GreaterOrEqual(b, operand(g, 0, INT64)), g.op.Less(b, operand(g, width, INT64)))
    fill = width - 1 if right_signed else 0
    return g.op.Where(valid, b, operand(g, fill, INT64)), (None if right_signed else valid)


def _shift(g, sts, outputs, self, other, direction: str) -> str:
    """Computed on int64 (sign- or zero-extended), shifted as uint64, truncated back.

    Truncating the 64-bit result keeps the low bits, which is the wrap of ``<<``; onnxruntime
    implements Where and BitShift for few narrow integer types, hence the 64-bit carrier.
    """
    elem = sts.dtype
    width = _WIDTH.get(elem)
    if width is None or (elem == UINT64):
        raise UnsupportedError(f"bit shifts of element type {elem} (integers only, as torch's CPU kernels)")
    signed = elem in _SIGNED
    x = cast(g, operand(g, self, elem), INT64)
    b, valid = _amount(g, other, width, right_signed=signed and direction == "RIGHT")
    if valid is False:  # a constant shift out of range: torch gives 0
        return g.op.Cast(g.op.Mul(x, operand(g, 0, INT64)), to=elem, outputs=outputs)
    ub = g.op.Cast(b, to=UINT64)
    if signed and direction == "RIGHT":
        neg = g.op.Less(x, operand(g, 0, INT64))
        positive = g.op.Where(neg, g.op.BitwiseNot(x), x)
        shifted = g.op.Cast(g.op.BitShift(g.op.Cast(positive, to=UINT64), ub, direction="RIGHT"), to=INT64)
        result = g.op.Where(neg, g.op.BitwiseNot(shifted), shifted)
    else:
        result = g.op.Cast(g.op.BitShift(g.op.Cast(x, to=UINT64), ub, direction=direction), to=INT64)
    if valid is not None:
        result = g.op.Where(valid, result, operand(g, 0, INT64))
    return g.op.Cast(result, to=elem, outputs=outputs)


# aten::__lshift__.Tensor, aten::__lshift__.Scalar, aten::bitwise_left_shift.Tensor,
# aten::bitwise_left_shift.Tensor_Scalar, aten::bitwise_left_shift.Scalar_Tensor
def aten_lshift(g, sts, outputs, self, other):
    "__lshift__.Tensor(Tensor self, Tensor other) -> Tensor"
    return _shift(g, sts, outputs, self, other, "LEFT")


# aten::__rshift__.Tensor, aten::__rshift__.Scalar, aten::bitwise_right_shift.Tensor,
# aten::bitwise_right_shift.Tensor_Scalar, aten::bitwise_right_shift.Scalar_Tensor
def aten_rshift(g, sts, outputs, self, other):
    "__rshift__.Tensor(Tensor self, Tensor other) -> Tensor"
    return _shift(g, sts, outputs, self, other, "RIGHT")


CONVERTERS = tuple(
    Converter(f"aten::{name}.{overload}", fn)
    for name, fn in (
        ("__lshift__", aten_lshift),
        ("bitwise_left_shift", aten_lshift),
        ("__rshift__", aten_rshift),
        ("bitwise_right_shift", aten_rshift),
    )
    for overload in (("Tensor", "Scalar") if name.startswith("__") else ("Tensor", "Tensor_Scalar", "Scalar_Tensor"))
)
