"""Converters written in onnxscript (issue 9, section 4): an ``@script`` function is a
converter; tonnx inlines its body into the graph. Tested against torch in onnxruntime."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st
from onnxscript import FLOAT, script
from onnxscript import opset18 as op

import tonnx
from tonnx.testing import check_op


@script()
def celu(self: FLOAT, alpha: float = 1.0) -> FLOAT:
    """celu(Tensor self, Scalar alpha=1.0) -> Tensor"""
    zero = op.CastLike(0.0, self)
    one = op.CastLike(1.0, self)
    a = op.CastLike(alpha, self)
    return op.Max(self, zero) + op.Min(zero, a * (op.Exp(self / a) - one))


@script()
def addcmul(self: FLOAT, tensor1: FLOAT, tensor2: FLOAT, value: float = 1.0) -> FLOAT:
    """addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"""
    return op.Add(self, op.Mul(op.CastLike(value, self), op.Mul(tensor1, tensor2)))


IN_HOUSE = tonnx.Dispatcher(
    converters=[
        tonnx.Converter("aten::celu.default", celu),
        tonnx.Converter("aten::addcmul.default", addcmul),
    ]
)


def _labels(onx) -> set[str]:
    return {p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.converter"}


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    alpha=st.sampled_from([None, 0.5, 1.5, 3]),
    seed=st.integers(0, 2**16),
)
def test_script_celu(shape, alpha, seed):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 3
    kwargs = {} if alpha is None else {"alpha": alpha}
    onx = check_op(torch.celu, [x], kwargs=kwargs, expect_op="aten::celu.default", dispatcher=IN_HOUSE)
    assert any(lab.endswith("test_script_converters.celu") and lab.startswith("<dispatcher>:") for lab in _labels(onx))
    assert "Celu" not in {n.op_type for n in onx.graph.node}  # the script's body, inlined
    assert not onx.functions


@given(value=st.sampled_from([None, -2.0, 0.5, 3]), seed=st.integers(0, 2**16))
def test_script_addcmul(value, seed):
    gen = torch.Generator().manual_seed(seed)
    x, t1, t2 = (torch.randn(2, 3, generator=gen) for _ in range(3))
    kwargs = {} if value is None else {"value": value}
    onx = check_op(
        torch.addcmul, [x, t1, t2], kwargs=kwargs, expect_op="aten::addcmul.default", dispatcher=IN_HOUSE
    )
    assert any(lab.endswith(".addcmul") and lab.startswith("<dispatcher>:") for lab in _labels(onx))
