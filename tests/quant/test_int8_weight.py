"""The cast of a constant 8-bit matrix to float32 (torchao's int8 weight-only linears) is
DequantizeLinear(w, 1.0): the same values, checked against torch in onnxruntime, with the
weight kept an 8-bit initializer (a run-time cast is the same DequantizeLinear)."""

from __future__ import annotations

import numpy as np
import onnx
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tonnx

from ._check import Op, export_and_run

COVERS = {"aten::_to_copy.default", "aten::to.dtype", "aten::_int_mm.default"}


@given(rows=st.integers(1, 6), columns=st.integers(1, 6), dtype=st.sampled_from([torch.int8, torch.uint8]),
       seed=st.integers(0, 2**16), constant=st.booleans(), method=st.sampled_from(["to", "float"]))
def test_integer_matrix_to_float32(rows, columns, dtype, seed, constant, method):
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(seed)
    w = torch.randint(info.min, info.max + 1, (rows, columns), generator=g, dtype=dtype)
    w.view(-1)[0] = info.min
    x = torch.randn(rows, columns, generator=g)

    def cast(t):
        return t.to(torch.float32) if method == "to" else t.float()

    if constant:
        module, args = Op(lambda m, a: a * cast(m.w), w=w), [x]
    else:
        module, args = Op(lambda m, a, b: a * cast(b)), [x, w]
    (expected,), (got,), onx = export_and_run(module, args)
    np.testing.assert_array_equal(expected, got)
    ops = [n.op_type for n in onx.graph.node]
    assert "DequantizeLinear" in ops and "Cast" not in ops, ops
    if constant:
        kind = 3 if dtype == torch.int8 else 2
        assert [i.data_type for i in onx.graph.initializer if tuple(i.dims) == (rows, columns)] == [kind]


def test_large_transposed_weight_stays_int8():
    """A 512x256 int8 weight transposed (over 65536 values: folded only at the end) then
    cast, as torchao's int8 weight-only linear does: an int8 initializer, exact."""
    g = torch.Generator().manual_seed(0)
    w = torch.randint(-128, 128, (512, 256), generator=g, dtype=torch.int8)
    x = torch.randn(256, 512, generator=g)
    (expected,), (got,), onx = export_and_run(Op(lambda m, a: a * m.w.t().to(torch.float32), w=w), [x])
    np.testing.assert_array_equal(expected, got)
    assert sorted(i.data_type for i in onx.graph.initializer if i.dims and np.prod(i.dims) == w.numel()) == [3]


@given(m=st.integers(1, 5), k=st.sampled_from([8, 16, 64]), n=st.sampled_from([8, 16]), seed=st.integers(0, 2**16))
def test_int_mm(m, k, n, seed):
    """int8 x int8 accumulated in int32: MatMulInteger, exact (extreme values included)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (k, n), generator=g, dtype=torch.int8)
    a[0, :] = -128
    b[:, 0] = -128
    (expected,), (got,), _ = export_and_run(Op(lambda mod, x, y: torch._int_mm(x, y)), [a, b])
    np.testing.assert_array_equal(expected, got)


def _session(onx, fused: bool, folder):
    """onnxruntime on one thread; ``fused``: default optimizations (the optimized graph is
    saved to read which ops ran), else basic level (the graph's own arithmetic)."""
    import os

    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    if fused:
        options.optimized_model_filepath = os.path.join(folder, "optimized.onnx")
    else:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    return ort.InferenceSession(onx.SerializeToString(), options, providers=["CPUExecutionProvider"])


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 3), k=st.sampled_from([16, 32, 48, 80]), n=st.sampled_from([8, 24]),
       dtype=st.sampled_from([torch.int8, torch.uint8]), seed=st.integers(0, 2**16))
def test_weight_only_matmul_fuses_into_matmulnbits(rows, k, n, dtype, seed, tmp_path_factory):
    """torchao's int8 weight-only linear, ``x @ w.t().to(float32) * scale``: from opset 21
    the weight is an int8 (K, N) initializer with DequantizeLinear(axis=0, block_size=32) of
    scales 1.0, which onnxruntime fuses into MatMulNBits(bits=8). Unfused: torch's values
    (float32 rounding of the matmul). Fused: the kernel quantizes each block of 32 values of
    a row of x to int8 (accuracy level 4), so the error is bounded per output by half a step
    of each block times the weights it meets; the test computes that bound."""
    folder = tmp_path_factory.mktemp("int8_matmulnbits")
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(seed)
    w = torch.randint(info.min, info.max + 1, (n, k), generator=g, dtype=dtype)
    scale = torch.rand(n, generator=g) * 0.01 + 1e-3
    x = torch.randn(rows, k, generator=g)
    module = Op(lambda m, a: a @ m.w.t().to(torch.float32) * m.scale, w=w, scale=scale)
    with torch.no_grad():
        expected = module(x).numpy()
    onx = tonnx.to_onnx(module, (x,), target_opset=21)
    weights = [i for i in onx.graph.initializer if tuple(i.dims) == (k, n)]
    assert [i.data_type for i in weights] == [3 if dtype == torch.int8 else 2]
    dq = [nd for nd in onx.graph.node if nd.op_type == "DequantizeLinear"]
    assert [(a.name, a.i) for a in dq[0].attribute] == [("axis", 0), ("block_size", 32)]
    name = onx.graph.input[0].name
    unfused = _session(onx, False, folder).run(None, {name: x.numpy()})[0]
    np.testing.assert_allclose(unfused, expected, rtol=1e-5, atol=1e-6)
    fused = _session(onx, True, folder).run(None, {name: x.numpy()})[0]
    assert "MatMulNBits" in [nd.op_type for nd in onnx.load(str(folder / "optimized.onnx")).graph.node]
    blocks = -(-k // 32)
    xs = np.zeros((rows, blocks * 32), np.float64)
    xs[:, :k] = x.numpy()
    half_step = np.abs(xs.reshape(rows, blocks, 32)).max(axis=2) / 127 / 2  # (rows, blocks)
    wk = np.zeros((blocks * 32, n), np.float64)
    wk[:k] = np.abs(w.numpy().astype(np.float64).T)
    bound = np.einsum("rb,bn->rn", half_step, wk.reshape(blocks, 32, n).sum(axis=1)) * scale.numpy()
    assert np.all(np.abs(fused - expected) <= bound * 1.001 + 1e-5), np.abs(fused - expected).max()


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 5), k=st.sampled_from([8, 16, 64]), n=st.sampled_from([8, 16]), seed=st.integers(0, 2**16),
       transposed=st.booleans())
def test_int_mm_constant_weight_runs_unsigned(m, k, n, seed, transposed):
    """int8 activations by a constant int8 weight (torchao's dynamic schemes, the weight
    transposed or not): MatMulInteger on uint8 + 128 with zero points 128 (onnxruntime's
    fast kernel), the weight stored uint8 once, exact with extreme values on both sides."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (n, k) if transposed else (k, n), generator=g, dtype=torch.int8)
    a[0, :] = -128
    a[-1, : k // 2] = 127
    b.view(-1)[: k // 2] = -128
    b.view(-1)[-k // 2 :] = 127
    fn = (lambda mod, x: torch._int_mm(x, mod.w.t())) if transposed else (lambda mod, x: torch._int_mm(x, mod.w))
    (expected,), (got,), onx = export_and_run(Op(fn, w=b), [a])
    np.testing.assert_array_equal(expected, got)
    matmul = [nd for nd in onx.graph.node if nd.op_type == "MatMulInteger"]
    assert len(matmul) == 1 and len(matmul[0].input) == 4, matmul
    assert [i.data_type for i in onx.graph.initializer if tuple(i.dims) == (k, n)] == [2]  # one uint8 copy
