"""gelu as onnxruntime's ``Gelu`` (erf) and ``FastGelu`` (tanh approximation).

Both compute torch's formula in float32: ``0.5 x (1 + erf(x / sqrt(2)))`` and
``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``. Other dtypes go to the aten pack.
"""

from __future__ import annotations

from onnx import TensorProto

from tonnx import Converter

from . import MS_DOMAIN


def _float32(node) -> bool:
    import torch

    value = node.args[0].meta.get("val")
    return value is not None and value.dtype == torch.float32


# aten::gelu.default
def aten_gelu(g, sts, outputs, self, approximate="none"):
    "gelu(Tensor self, *, str approximate='none') -> Tensor"
    op_type = "FastGelu" if approximate == "tanh" else "Gelu"
    out = g.make_node(op_type, [self], outputs, domain=MS_DOMAIN)
    g.set_type(out, TensorProto.FLOAT)
    return out


CONVERTERS = (Converter("aten::gelu.default", aten_gelu, applies=_float32),)
