"""Matrix products: linear, addmm, mm, matmul."""

from __future__ import annotations

from tonnx import Converter


# aten::linear.default
def aten_linear(g, sts, outputs, input, weight, bias=None):
    "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"
    if g.get_rank(input) == 2:
        return g.op.Gemm(input, weight, bias, transB=1, outputs=outputs)
    product = g.op.MatMul(input, g.op.Transpose(weight, perm=[1, 0]))
    if bias is None:
        return g.op.Identity(product, outputs=outputs)
    return g.op.Add(product, bias, outputs=outputs)


# aten::t.default
def aten_t(g, sts, outputs, self):
    "t(Tensor(a) self) -> Tensor(a)"
    if g.get_rank(self) < 2:
        return g.op.Identity(self, outputs=outputs)
    return g.op.Transpose(self, perm=[1, 0], outputs=outputs)


# aten::addmm.default
def aten_addmm(g, sts, outputs, self, mat1, mat2, beta=1, alpha=1):
    "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"
    return g.op.Gemm(mat1, mat2, self, alpha=float(alpha), beta=float(beta), outputs=outputs)


CONVERTERS = (
    Converter("aten::linear.default", aten_linear),
    Converter("aten::t.default", aten_t),
    Converter("aten::addmm.default", aten_addmm),
)
