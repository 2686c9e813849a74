"""Hypothesis tests of torchao's affine quantization ops (quantize_affine, dequantize_affine,
choose_qparams_affine) and aten::_int_mm against torch, run in onnxruntime: block sizes
per tensor, per row (token), per group and per column, symmetric and asymmetric mappings,
int8/uint8/int4-in-int8 ranges. Skipped where torchao is not installed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto

from tonnx.converters import onnx_type_from_torch
from tonnx.testing import make_tensor

from ._check import Op, assert_equal, export_and_run

pytest.importorskip("torchao", reason="torchao is not installed: pip install 'torchao>=0.18' (tonnx[test] has it)")

import torchao.quantization.quant_primitives  # noqa: E402,F401  registers the torchao:: ops

ao = torch.ops.torchao

COVERS = {
    "torchao::quantize_affine.default",
    "torchao::dequantize_affine.default",
    "torchao::choose_qparams_affine.default",
}

RANGES = [(torch.int8, -128, 127), (torch.int8, -8, 7), (torch.uint8, 0, 255), (torch.int8, -127, 127)]


@st.composite
def blocked(draw):
    """(shape, block_size) with every block dividing its dimension."""
    rows, groups, group = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.sampled_from([4, 8, 32]))
    kind = draw(st.sampled_from(["tensor", "row", "group", "column"]))
    shape = (rows, groups * group)
    block = {"tensor": list(shape), "row": [1, shape[1]], "group": [1, group], "column": [max(rows, 2), 1]}[kind]
    if kind == "column" and rows == 1:  # a block of ones: torchao's reduction over dim=[] fails in torch too
        shape, block = (2, shape[1]), [2, 1]
    return shape, block


@given(case=blocked(), r=st.sampled_from(RANGES), mapping=st.sampled_from(["SYMMETRIC", "ASYMMETRIC"]),
       seed=st.integers(0, 2**16), offset=st.floats(-3.0, 3.0), keepdim=st.booleans())
def test_choose_quantize_dequantize_affine(case, r, mapping, seed, offset, keepdim):
    shape, block = case
    dtype, low, high = r
    x = make_tensor(seed, shape, "float32", -4.0, 4.0) + offset

    def fn(m, t):
        scale, zero_point = ao.choose_qparams_affine(t, mapping, block, dtype, low, high, None, torch.float32,
                                                     torch.int32 if mapping == "ASYMMETRIC" else dtype, keepdim)
        q = ao.quantize_affine(t, block, scale, zero_point, dtype, low, high)
        return scale, zero_point, q, ao.dequantize_affine(q, block, scale, zero_point, dtype, low, high)

    expected, got, _ = export_and_run(Op(fn), [x])
    for e, o in zip(expected, got):
        assert_equal(e, o)


#: (torch dtype, quant_min, quant_max, ONNX type of the weight at opset 21)
WEIGHT_RANGES = [(torch.int8, -8, 7, TensorProto.INT4), (torch.uint8, 0, 15, TensorProto.UINT4),
                 (torch.int8, -128, 127, TensorProto.INT8), (torch.int8, -7, 7, TensorProto.INT4)]


@given(rows=st.integers(1, 6), groups=st.integers(1, 3), group=st.sampled_from([8, 32]), seed=st.integers(0, 2**16),
       opset=st.sampled_from([20, 21]), with_zero=st.booleans(), r=st.sampled_from(WEIGHT_RANGES))
def test_dequantize_affine_constant_weight(rows, groups, group, seed, opset, with_zero, r):
    """A constant weight per row or per group: one DequantizeLinear (block_size at opset 21);
    the weight stays an 8-bit initializer, or from opset 21 a 4-bit one when its range fits
    (INT4/UINT4, stored transposed with axis 0 when blocked: the layout onnxruntime fuses)."""
    dtype, low, high, elem = r
    g = torch.Generator().manual_seed(seed)
    w = torch.randint(low, high + 1, (rows, groups * group), generator=g, dtype=dtype)
    w[0, 0], w[-1, -1] = low, high  # both ends of the range
    scale = torch.rand(rows, groups, generator=g) + 0.01
    zero = torch.randint(low, high + 1, (rows, groups), generator=g, dtype=dtype)
    module = Op(lambda m, t: t + ao.dequantize_affine(m.w, [1, group], m.s, m.z if with_zero else None, dtype, low, high),
                w=w, s=scale, z=zero)
    x = torch.randn(rows, groups * group)
    (expected,), (got,), onx = export_and_run(module, [x], opset)
    np.testing.assert_array_equal(expected, got)
    if groups == 1 or opset >= 21:
        assert "DequantizeLinear" in {n.op_type for n in onx.graph.node}
        kept = elem if opset >= 21 else onnx_type_from_torch(dtype)
        dims = (groups * group, rows) if kept in (TensorProto.INT4, TensorProto.UINT4) and groups > 1 else (rows, groups * group)
        assert [i.data_type for i in onx.graph.initializer if tuple(i.dims) == dims] == [kept]
