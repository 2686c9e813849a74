"""``aten::linear`` of a dequantized weight, written so that onnxruntime fuses the weight's
``DequantizeLinear`` with the product into ``MatMulNBits``.

The aten pack writes a 2-D linear as ``Gemm(x, W, bias, transB=1)``. Followed by a ``Relu``,
onnxruntime (1.31.1, 1.32) first fuses ``Gemm`` + ``Relu`` into ``FusedGemm``, which keeps
the ``DequantizeLinear`` at every call: a 3-layer 1024-wide int4 MLP ran 10-11.6 ms against
1.3 ms for torch.onnx's export (tests/bench/bench_quant.py --schemes). ``Gemm`` without bias
then ``Add`` gives the same sum (Gemm adds the bias after the product too) and leaves no
``Gemm`` + ``Relu`` pair: every layer becomes ``MatMulNBits``. A linear whose input is the
output of a static ``dequantize_per_tensor`` (PT2E static, QAT) keeps the aten form, which
onnxruntime fuses into ``QGemm``.
"""

from __future__ import annotations

from tonnx.converters import Converter

#: the FX targets that dequantize a weight (their result is a linear's float weight)
_DEQUANTIZE = frozenset({
    "quantized_decomposed.dequantize_per_channel.default",
    "quantized_decomposed.dequantize_per_channel_group.default",
    "torchao.dequantize_affine.default",
})
#: a static activation's dequantize: the linear is fused into QGemm as the aten pack writes it
_STATIC_ACTIVATION = frozenset({
    "quantized_decomposed.dequantize_per_tensor.default",
    "quantized_decomposed.dequantize_per_channel.default",
})


def _target(value) -> str:
    return str(getattr(value, "target", ""))


def reads_weight_of_linear(user, weight) -> bool:
    """``user`` is a linear taking ``weight`` as its weight only, its input not a static
    dequantize (whose linear onnxruntime fuses into QGemm with a per-channel weight)."""
    return (str(user.target) == "aten.linear.default" and len(user.args) > 1 and user.args[1] is weight
            and user.args[0] is not weight and _target(user.args[0]) not in _STATIC_ACTIVATION)


def dequantized_weight_linear(node) -> bool:
    """A 2-D float32 linear with a bias, whose weight is dequantized and whose input is not
    a static dequantize."""
    import torch

    args = list(node.args) + [None] * (3 - len(node.args))
    x, weight, bias = args[:3]
    val = getattr(x, "meta", {}).get("val")
    return (val is not None and val.dim() == 2 and val.dtype == torch.float32 and bias is not None
            and _target(weight) in _DEQUANTIZE and _target(x) not in _STATIC_ACTIVATION)


# aten::linear.default
def aten_linear(g, sts, outputs, input, weight, bias=None):
    "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"
    product = g.op.Gemm(input, weight, transB=1)
    return g.op.Add(product, bias, outputs=outputs)


CONVERTERS = (
    Converter("aten::linear.default", aten_linear, applies=dequantized_weight_linear, priority=110),
)
