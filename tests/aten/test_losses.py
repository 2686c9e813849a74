"""Hypothesis tests of the classification losses (NegativeLogLikelihoodLoss) against torch."""

from __future__ import annotations

import onnx
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import check_op

F = torch.nn.functional

COVERS = {
    "aten::cross_entropy_loss.default",
    "aten::nll_loss_nd.default",
    "aten::nll_loss.default",
    "aten::nll_loss_forward.default",
}


def _case(seed, spatial: bool, classes: int):
    gen = torch.Generator().manual_seed(seed)
    shape = (4, classes, 3) if spatial else (5, classes)
    logits = torch.randn(shape, generator=gen) * 3
    target = torch.randint(0, classes, (shape[0],) + shape[2:], generator=gen)
    weight = torch.rand(classes, generator=gen) + 0.1
    return logits, target, weight


@given(
    seed=st.integers(0, 1000),
    spatial=st.booleans(),
    classes=st.integers(2, 6),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    weighted=st.booleans(),
    ignore=st.booleans(),
)
def test_cross_entropy_and_nll(seed, spatial, classes, reduction, weighted, ignore):
    logits, target, weight = _case(seed, spatial, classes)
    ignore_index = 1 if ignore else -100
    tensors = [logits, target] + ([weight] if weighted else [])

    def ce(x, t, w=None):
        return F.cross_entropy(x, t, w, reduction=reduction, ignore_index=ignore_index)

    def nll(x, t, w=None):
        return F.nll_loss(x.log_softmax(1), t, w, reduction=reduction, ignore_index=ignore_index)

    onx = check_op(ce, tensors, expect_op="aten::cross_entropy_loss.default")
    assert [n.op_type for n in onx.graph.node].count("NegativeLogLikelihoodLoss") == 1
    check_op(nll, tensors, expect_op="aten::nll_loss_nd.default")


def test_every_target_ignored_gives_nan_as_torch():
    logits, target, _ = _case(0, False, 3)
    check_op(lambda x, t: F.cross_entropy(x, t * 0 + 2, ignore_index=2), [logits, target], expect_op="aten::cross_entropy_loss.default")


def test_other_calls_keep_the_decomposition():
    """Label smoothing and probability targets: the direct converter does not apply."""
    logits, target, _ = _case(1, False, 4)
    onx = check_op(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), [logits, target], expect_op="aten::cross_entropy_loss.default")
    expanded = {p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.expanded_from"}
    assert any(e.endswith("aten::cross_entropy_loss.default") for e in expanded)
    probs = torch.rand(5, 4).softmax(1)
    check_op(F.cross_entropy, [logits, probs], expect_op="aten::cross_entropy_loss.default")


def test_nll_loss_forward_called_directly():
    logits, target, weight = _case(2, False, 4)
    check_op(
        lambda x, t, w: torch.ops.aten.nll_loss_forward(x.log_softmax(1), t, w, 1, -100)[0],
        [logits, target, weight],
        expect_op="aten::nll_loss_forward.default",
    )
    check_op(lambda x, t: torch.ops.aten.nll_loss(x.log_softmax(1), t), [logits, target], expect_op="aten::nll_loss.default")
    assert onnx  # the model checker ran inside check_op
