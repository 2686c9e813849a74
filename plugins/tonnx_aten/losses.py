"""Classification losses as ONNX's NegativeLogLikelihoodLoss (after LogSoftmax).

torch's decomposition of ``cross_entropy_loss`` takes some twenty nodes (a gather, masks
for ``ignore_index``, the weight sums); ONNX's ``NegativeLogLikelihoodLoss`` has the same
definition (the mean divides by the sum of the weights of the targets not ignored), so
these converters emit two nodes. They apply to class-index targets without label
smoothing on batched inputs; the other calls (probability targets, label smoothing, an
unbatched input) keep torch's decomposition through the pack's decomposition converters.
"""

from __future__ import annotations

import torch

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, opmath_type

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _arg(node, index: int, name: str, default):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _class_index_call(node) -> bool:
    """A batched input (N, C, ...) with an integer class-index target, no smoothing."""
    inp, target = node.args[0].meta.get("val"), node.args[1].meta.get("val")
    if inp is None or target is None or inp.dim() < 2 or target.dtype != torch.int64:
        return False
    return _arg(node, 5, "label_smoothing", 0.0) == 0.0


def _nll(g, outputs, log_probs: str, target: str, weight, reduction: int, ignore_index: int) -> str:
    if reduction not in _REDUCTION:
        raise UnsupportedError(f"loss reduction={reduction}")
    if type(ignore_index) is not int:
        raise UnsupportedError("a dynamic ignore_index (ONNX takes it as an attribute)")
    elem = g.get_type(log_probs)
    compute = opmath_type(elem)  # torch sums float16/bfloat16 losses in float32
    inputs = [cast(g, log_probs, compute), target] + ([cast(g, weight, compute)] if weight is not None else [])
    if compute == elem:
        return g.op.NegativeLogLikelihoodLoss(
            *inputs, reduction=_REDUCTION[reduction], ignore_index=ignore_index, outputs=outputs
        )
    loss = g.op.NegativeLogLikelihoodLoss(*inputs, reduction=_REDUCTION[reduction], ignore_index=ignore_index)
    return g.op.Cast(loss, to=elem, outputs=outputs)


# aten::cross_entropy_loss.default
def aten_cross_entropy_loss(g, sts, outputs, self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor"
    return _nll(g, outputs, g.op.LogSoftmax(self, axis=1), target, weight, reduction, ignore_index)


# aten::nll_loss_nd.default, aten::nll_loss.default
def aten_nll_loss_nd(g, sts, outputs, self, target, weight=None, reduction=1, ignore_index=-100):
    "nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor"
    return _nll(g, outputs, self, target, weight, reduction, ignore_index)


# aten::nll_loss_forward.default
def aten_nll_loss_forward(g, sts, outputs, self, target, weight, reduction, ignore_index):
    "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)"
    if outputs[1]:
        raise UnsupportedError("nll_loss_forward's total_weight output")
    return _nll(g, outputs[:1], self, target, weight, reduction, ignore_index), ""


CONVERTERS = (
    Converter("aten::cross_entropy_loss.default", aten_cross_entropy_loss, applies=_class_index_call),
    Converter("aten::nll_loss_nd.default", aten_nll_loss_nd, applies=_class_index_call),
    Converter("aten::nll_loss.default", aten_nll_loss_nd, applies=_class_index_call),
    Converter("aten::nll_loss_forward.default", aten_nll_loss_forward, applies=_class_index_call),
)
