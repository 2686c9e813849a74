"""Hypothesis tests of the per-channel quantize/dequantize converters against torch's
reference ops, run in onnxruntime: drawn shapes, axes, scales (float32 and float64), zero
points, dtype ranges, NaN and infinities; constant parameters take the QDQ form (axis=),
run-time ones the exact form."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import make_tensor, shapes

from ._check import INT_DTYPES, Op, assert_equal, division_ties, export_and_run, qd

COVERS = {
    "quantized_decomposed::quantize_per_channel.default",
    "quantized_decomposed::dequantize_per_channel.default",
}


@st.composite
def channel_case(draw):
    """(shape, axis, dtype, quant_min, quant_max, scales, zero_points, seed)."""
    shape = draw(shapes(min_rank=1, max_rank=4, min_side=1, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    dtype = draw(st.sampled_from(INT_DTYPES))
    info = torch.iinfo(dtype)
    narrow = draw(st.booleans())
    low = info.min + 1 if (narrow and info.min < 0) else info.min
    high = info.max
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    channels = shape[axis]
    scales = (torch.rand(channels, generator=g) * 2 + 1e-3).to(draw(st.sampled_from([torch.float32, torch.float64])))
    zero_points = torch.randint(low, high + 1, (channels,), generator=g)
    return shape, axis, dtype, low, high, scales, zero_points, seed


@given(case=channel_case(), opset=st.sampled_from([20, 21]))
def test_quantize_per_channel(case, opset):
    shape, axis, dtype, low, high, scales, zero_points, seed = case
    x = make_tensor(seed, shape, "float32", -300.0, 300.0)
    x.view(-1)[:: max(1, x.numel() // 3)] = float("inf") if seed % 2 else float("nan")
    nan = x.isnan().numpy()
    constant = Op(lambda m, t: qd.quantize_per_channel(t, m.s, m.z, axis, low, high, dtype), s=scales, z=zero_points)
    (expected,), (got,), onx = export_and_run(constant, [x], opset)
    qdq = "QuantizeLinear" in {n.op_type for n in onx.graph.node}
    assert qdq == (scales.dtype == torch.float32 and (dtype in (torch.int8, torch.uint8) or opset >= 21))
    view = [1] * len(shape)
    view[axis] = -1
    allowed = division_ties(x.numpy(), scales.view(view).float().numpy()) if qdq else None
    assert_equal(expected, got, allowed, nan)
    runtime = Op(lambda m, t, s, z: qd.quantize_per_channel(t, s, z, axis, low, high, dtype))
    (expected,), (got,), onx = export_and_run(runtime, [x, scales, zero_points], opset)
    assert_equal(expected, got, None, nan)


@given(case=channel_case(), opset=st.sampled_from([20, 21]), with_zero=st.booleans(),
       out_dtype=st.sampled_from([None, torch.float16]))
def test_dequantize_per_channel(case, opset, with_zero, out_dtype):
    shape, axis, dtype, low, high, scales, zero_points, seed = case
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(low, high + 1, shape, generator=g).to(dtype)
    z = zero_points if with_zero else None
    constant = Op(lambda m, t: qd.dequantize_per_channel(t, m.s, m.z if with_zero else None, axis, low, high, dtype,
                                                         out_dtype=out_dtype), s=scales, z=zero_points)
    (expected,), (got,), onx = export_and_run(constant, [q], opset)
    qdq = "DequantizeLinear" in {n.op_type for n in onx.graph.node}
    assert qdq or scales.dtype == torch.float64 or (dtype not in (torch.int8, torch.uint8) and opset < 21)
    assert_equal(expected, got)
    args = [q, scales] + ([z] if with_zero else [])
    runtime = Op(lambda m, t, s, *zp: qd.dequantize_per_channel(t, s, zp[0] if zp else None, axis, low, high, dtype,
                                                                out_dtype=out_dtype))
    (expected,), (got,), onx = export_and_run(runtime, args, opset)
    assert_equal(expected, got)


def test_per_channel_weight_stays_int8():
    """A PT2E-style weight: int8 initializer + one DequantizeLinear(axis=0)."""
    w = torch.randint(-127, 128, (8, 3, 3, 3), dtype=torch.int8)
    module = Op(lambda m, t: t + qd.dequantize_per_channel(m.w, m.s, m.z, 0, -127, 127, torch.int8),
                w=w, s=torch.rand(8) + 0.01, z=torch.zeros(8, dtype=torch.int64))
    (expected,), (got,), onx = export_and_run(module, [torch.randn(8, 3, 3, 3)])
    assert [n.op_type for n in onx.graph.node] == ["DequantizeLinear", "Add"]
    assert {i.data_type for i in onx.graph.initializer if tuple(i.dims) == (8, 3, 3, 3)} == {3}  # INT8
    np.testing.assert_array_equal(expected, got)
