"""Linears of dequantized weights (PT2E weight-only and dynamic schemes): the weight is
stored (K, N) with DequantizeLinear(axis=0, block_size=32) and the linear is Gemm without
bias then Add, so that onnxruntime fuses every layer into MatMulNBits (a Gemm + Relu pair
would become FusedGemm first and dequantize at every call)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tonnx

from ._check import Op, qd
from .test_int8_weight import _session

COVERS = {"aten::linear.default"}


def _quantized(g, n, k, dtype):
    info = torch.iinfo(dtype)
    w = torch.randint(info.min, info.max + 1, (n, k), generator=g, dtype=dtype)
    scale = torch.rand(n, generator=g) * 0.01 + 1e-3
    zero = torch.randint(info.min // 4, info.max // 4 + 1, (n,), generator=g, dtype=torch.int64)
    if dtype == torch.uint8:
        zero = zero + 64
    return w, scale, zero


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 3), k=st.sampled_from([16, 40, 64]), n=st.sampled_from([8, 32]),
       dtype=st.sampled_from([torch.int8, torch.uint8]), seed=st.integers(0, 2**16))
def test_weight_only_linears_fuse_into_matmulnbits(rows, k, n, dtype, seed, tmp_path_factory):
    """Linear -> ReLU -> Linear with per-channel int8/uint8 weights (zero points too):
    unfused, torch's values (float32 rounding of the products); fused, MatMulNBits for both
    layers, within its int8 quantization of the activations (accuracy level 4: a block's
    half step, 1/254 of its largest value, times the weights it meets; loosely bounded
    here by 2% of the output's range over two layers)."""
    folder = tmp_path_factory.mktemp("dequantized_linear")
    g = torch.Generator().manual_seed(seed)
    info = torch.iinfo(dtype)
    w1, s1, z1 = _quantized(g, n, k, dtype)
    w2, s2, z2 = _quantized(g, n, n, dtype)
    b1, b2 = torch.randn(n, generator=g), torch.randn(n, generator=g)
    x = torch.randn(rows, k, generator=g)

    def fn(m, a):
        d1 = qd.dequantize_per_channel(m.w1, m.s1, m.z1, 0, info.min, info.max, dtype)
        d2 = qd.dequantize_per_channel(m.w2, m.s2, m.z2, 0, info.min, info.max, dtype)
        h = torch.relu(torch.nn.functional.linear(a, d1, m.b1))
        return torch.nn.functional.linear(h, d2, m.b2)

    module = Op(fn, w1=w1, s1=s1, z1=z1, w2=w2, s2=s2, z2=z2, b1=b1, b2=b2)
    with torch.no_grad():
        expected = module(x).numpy()
    onx = tonnx.to_onnx(module, (x,), target_opset=21)
    assert sorted(tuple(i.dims) for i in onx.graph.initializer if i.data_type in (2, 3) and len(i.dims) == 2
                  and i.dims[0] in (k, n) and i.dims[1] == n)[:2] == sorted([(k, n), (n, n)])
    name = onx.graph.input[0].name
    unfused = _session(onx, False, folder).run(None, {name: x.numpy()})[0]
    np.testing.assert_allclose(unfused, expected, rtol=1e-5, atol=1e-5)
    fused = _session(onx, True, folder).run(None, {name: x.numpy()})[0]
    ops = [nd.op_type for nd in onnx.load(str(folder / "optimized.onnx")).graph.node]
    assert ops.count("MatMulNBits") == 2 and "DequantizeLinear" not in ops and "FusedGemm" not in ops, ops
    assert np.abs(fused - expected).max() <= 0.02 * (np.abs(expected).max() + 1e-3)


def test_static_activation_keeps_gemm():
    """A linear whose input is a static dequantize keeps Gemm with its bias (QGemm's form)."""
    g = torch.Generator().manual_seed(0)
    w, s, z = _quantized(g, 8, 16, torch.int8)
    b = torch.randn(8, generator=g)

    def fn(m, a):
        q = qd.quantize_per_tensor(a, 0.05, 0, -128, 127, torch.int8)
        d = qd.dequantize_per_tensor(q, 0.05, 0, -128, 127, torch.int8)
        return torch.nn.functional.linear(d, qd.dequantize_per_channel(m.w, m.s, m.z, 0, -128, 127, torch.int8), m.b)

    x = torch.randn(2, 16, generator=g)
    module = Op(fn, w=w, s=s, z=z, b=b)
    onx = tonnx.to_onnx(module, (x,), target_opset=21)
    gemm = [nd for nd in onx.graph.node if nd.op_type == "Gemm"]
    assert len(gemm) == 1 and len(gemm[0].input) == 3 and "Add" not in [nd.op_type for nd in onx.graph.node]
    with torch.no_grad():
        expected = module(x).numpy()
    got = _session(onx, False, None).run(None, {onx.graph.input[0].name: x.numpy()})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@settings(max_examples=6, deadline=None)
@given(k=st.sampled_from([32, 48]), n=st.sampled_from([16, 24]), seed=st.integers(0, 2**16))
def test_bias_free_linear_of_3d_input_fuses(k, n, seed, tmp_path_factory):
    """A bias-free linear of a (batch, seq, K) input (a transformer's projection): the
    blocked (K, N) weight reaches onnxruntime's MatMul and becomes MatMulNBits; unfused,
    torch's values."""
    folder = tmp_path_factory.mktemp("dequantized_linear_3d")
    g = torch.Generator().manual_seed(seed)
    w, s, z = _quantized(g, n, k, torch.int8)
    x = torch.randn(2, 3, k, generator=g)

    def fn(m, a):
        return torch.nn.functional.linear(a, qd.dequantize_per_channel(m.w, m.s, m.z, 0, -128, 127, torch.int8))

    module = Op(fn, w=w, s=s, z=z)
    with torch.no_grad():
        expected = module(x).numpy()
    onx = tonnx.to_onnx(module, (x,), target_opset=21)
    name = onx.graph.input[0].name
    np.testing.assert_allclose(_session(onx, False, folder).run(None, {name: x.numpy()})[0], expected,
                               rtol=1e-5, atol=1e-5)
    _session(onx, True, folder)
    ops = [nd.op_type for nd in onnx.load(str(folder / "optimized.onnx")).graph.node]
    assert "MatMulNBits" in ops and "DequantizeLinear" not in ops, ops


@pytest.mark.parametrize("granularity", ["group32", "row"])
def test_torchao_int8_intx_weight_only_fuses(granularity, tmp_path):
    """torchao's ``IntxWeightOnlyConfig(weight_dtype=torch.int8)`` (dequantize_affine per
    group of 32 or per row) on Linear -> ReLU -> bias-free Linear: the weights stored
    (K, N) int8 in blocks, both layers MatMulNBits; unfused, torch's values."""
    pytest.importorskip("torchao")
    from torchao.quantization import IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerAxis, PerGroup
    from torchao.utils import unwrap_tensor_subclass

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16, bias=False)).eval()
    quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int8,
                                          granularity=PerGroup(32) if granularity == "group32" else PerAxis(0)))
    unwrap_tensor_subclass(model)
    x = torch.randn(3, 64)
    with torch.no_grad():
        expected = model(x).numpy()
    onx = tonnx.to_onnx(model, (x,), target_opset=21)
    assert sorted(tuple(i.dims) for i in onx.graph.initializer if i.data_type == 3) == [(32, 16), (64, 32)]
    name = onx.graph.input[0].name
    np.testing.assert_allclose(_session(onx, False, tmp_path).run(None, {name: x.numpy()})[0], expected,
                               rtol=1e-5, atol=1e-5)
    _session(onx, True, tmp_path)
    ops = [nd.op_type for nd in onnx.load(str(tmp_path / "optimized.onnx")).graph.node]
    assert ops.count("MatMulNBits") == 2 and "DequantizeLinear" not in ops, ops
