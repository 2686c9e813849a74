"""Element-wise arithmetic and activations."""

from __future__ import annotations

from tonnx import Converter, UnsupportedError

from ._helpers import operand


def _alpha_scaled(g, other, alpha, elem: int):
    other = operand(g, other, elem)
    if alpha == 1:
        return other
    return g.op.Mul(other, operand(g, alpha, elem))


# aten::add.Tensor
def aten_add(g, sts, outputs, self, other, alpha=1):
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    elem = sts.dtype
    return g.op.Add(operand(g, self, elem), _alpha_scaled(g, other, alpha, elem), outputs=outputs)


# aten::sub.Tensor
def aten_sub(g, sts, outputs, self, other, alpha=1):
    "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    elem = sts.dtype
    return g.op.Sub(operand(g, self, elem), _alpha_scaled(g, other, alpha, elem), outputs=outputs)


# aten::mul.Tensor
def aten_mul(g, sts, outputs, self, other):
    "mul.Tensor(Tensor self, Tensor other) -> Tensor"
    elem = sts.dtype
    return g.op.Mul(operand(g, self, elem), operand(g, other, elem), outputs=outputs)


# aten::sigmoid.default
def aten_sigmoid(g, sts, outputs, self):
    "sigmoid(Tensor self) -> Tensor"
    return g.op.Sigmoid(self, outputs=outputs)


# aten::relu.default
def aten_relu(g, sts, outputs, self):
    "relu(Tensor self) -> Tensor"
    if sts.dtype is None:
        raise UnsupportedError("relu without dtype")
    return g.op.Relu(self, outputs=outputs)


CONVERTERS = (
    Converter("aten::add.Tensor", aten_add),
    Converter("aten::sub.Tensor", aten_sub),
    Converter("aten::mul.Tensor", aten_mul),
    Converter("aten::sigmoid.default", aten_sigmoid),
    Converter("aten::relu.default", aten_relu),
)
