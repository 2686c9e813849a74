"""Hypothesis tests of fake quantization (QAT's quantize-dequantize in float) against torch's
CPU kernels, run in onnxruntime: per tensor (python and tensor parameters) and per channel,
constant parameters (QuantizeLinear + DequantizeLinear) and run-time ones (torch's
arithmetic), full, narrow, 4-bit and 16-bit ranges, infinities (where torch's result is
undefined: checked finite); the mask output too."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import make_tensor

from ._check import Op, division_ties, export_and_run

COVERS = {
    "aten::fake_quantize_per_tensor_affine_cachemask.default",
    "aten::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default",
    "aten::fake_quantize_per_channel_affine_cachemask.default",
    "aten::_fused_moving_avg_obs_fq_helper_functional.default",
}

RANGES = [(-128, 127), (0, 255), (-127, 127), (-8, 7), (0, 15), (-32768, 32767)]
aten = torch.ops.aten


def draw_input(seed, shape, with_inf):
    x = make_tensor(seed, shape, "float32", -6.0, 6.0)
    if with_inf and x.numel() >= 2:
        x.view(-1)[0], x.view(-1)[-1] = float("inf"), -float("inf")
    return x


def assert_fake_quantized(x, expected, got, scale, axis=None):
    """Equal, except one step (the scale) where torch's x * float32(1 / scale) and
    QuantizeLinear's x / scale round to different integers (``division_ties``). An infinite
    input is not compared: torch casts it to int64 (undefined in C++; its per-tensor kernel
    gives quant_max for +inf, its per-channel kernel quant_min), QuantizeLinear saturates:
    the output there must be finite."""
    unspecified = ~np.isfinite(x)
    assert np.isfinite(got[unspecified]).all()
    x, expected, got = x.copy(), expected.copy(), got.copy()
    x[unspecified], expected[unspecified], got[unspecified] = 0.0, 0.0, 0.0
    s = np.asarray(scale, dtype=np.float32)
    if axis is not None:
        s = s.reshape([-1 if i == axis else 1 for i in range(x.ndim)])
    s = np.broadcast_to(s, x.shape)
    allowed = division_ties(x, s)
    diff = np.abs(expected.astype(np.float64) - got.astype(np.float64))
    ok = (expected == got) | (allowed & (diff <= s * (1 + 1e-6)))
    bad = np.argwhere(~ok)
    assert bad.size == 0, f"{len(bad)} differ, first {bad[0].tolist()}: x {x[tuple(bad[0])]}, torch {expected[tuple(bad[0])]}, onnx {got[tuple(bad[0])]}"


@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), r=st.sampled_from(RANGES), seed=st.integers(0, 2**16),
       scale=st.floats(1e-3, 2.0), zero_frac=st.floats(0, 1), as_tensors=st.booleans(), constant=st.booleans(),
       with_inf=st.booleans())
def test_fake_quantize_per_tensor(shape, r, seed, scale, zero_frac, as_tensors, constant, with_inf):
    low, high = r
    zero_point = int(low + zero_frac * (high - low))
    x = draw_input(seed, shape, with_inf)
    s, z = torch.tensor([scale], dtype=torch.float32), torch.tensor([zero_point], dtype=torch.int32)
    scale = float(s)  # the float32 value torch's kernel uses
    if not as_tensors:
        module, args = Op(lambda m, t: torch.fake_quantize_per_tensor_affine(t, scale, zero_point, low, high)), [x]
    elif constant:
        module, args = Op(lambda m, t: torch.fake_quantize_per_tensor_affine(t, m.s, m.z, low, high), s=s, z=z), [x]
    else:
        module, args = Op(lambda m, t, a, b: torch.fake_quantize_per_tensor_affine(t, a, b, low, high)), [x, s, z]
    (expected,), (got,), _ = export_and_run(module, args, opset=21)
    assert_fake_quantized(x.numpy(), expected, got, scale)


@given(rows=st.integers(1, 4), channels=st.integers(1, 5), axis=st.sampled_from([0, 1, 2]), r=st.sampled_from(RANGES),
       seed=st.integers(0, 2**16), constant=st.booleans(), with_inf=st.booleans())
def test_fake_quantize_per_channel(rows, channels, axis, r, seed, constant, with_inf):
    low, high = r
    x = draw_input(seed, (rows, channels, 3), with_inf)
    g = torch.Generator().manual_seed(seed)
    size = x.shape[axis]
    s = torch.rand(size, generator=g) * 0.5 + 1e-3
    z = torch.randint(low, high + 1, (size,), generator=g, dtype=torch.int32)
    if constant:
        module, args = Op(lambda m, t: torch.fake_quantize_per_channel_affine(t, m.s, m.z, axis, low, high), s=s, z=z), [x]
    else:
        module, args = Op(lambda m, t, a, b: torch.fake_quantize_per_channel_affine(t, a, b, axis, low, high)), [x, s, z]
    (expected,), (got,), _ = export_and_run(module, args, opset=21)
    assert_fake_quantized(x.numpy(), expected, got, s.numpy(), axis % 3)


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=2), r=st.sampled_from(RANGES), seed=st.integers(0, 2**16),
       scale=st.floats(1e-2, 1.0))
def test_fake_quantize_mask(shape, r, seed, scale):
    """The cachemask variants' second output (inside the range before the clamp): exact."""
    low, high = r
    x = draw_input(seed, shape, False) * 50
    scale = float(torch.tensor(scale, dtype=torch.float32))
    (e_out, e_mask), (g_out, g_mask), _ = export_and_run(
        Op(lambda m, t: aten.fake_quantize_per_tensor_affine_cachemask(t, scale, 0, low, high)), [x], opset=21)
    allowed = division_ties(x.numpy(), scale)
    assert_fake_quantized(x.numpy(), e_out, g_out, scale)
    np.testing.assert_array_equal(e_mask[~allowed], g_mask[~allowed])


def test_observer_helper_with_observers_off():
    """A QAT observer whose observer is off and fake quantization on: per tensor and per
    row, with the scale and zero point torch chooses again from the running statistics;
    off entirely: the input."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, generator=g)

    def fn(m, t):
        per_tensor = aten._fused_moving_avg_obs_fq_helper_functional(
            t, m.off, m.on, m.lo, m.hi, m.s1, m.z1, 0.01, -128, 127, 0, False, False)
        per_row = aten._fused_moving_avg_obs_fq_helper_functional(
            t, m.off, m.on, m.lo4, m.hi4, m.s4, m.z4, 0.01, -127, 127, 0, True, True)
        disabled = aten._fused_moving_avg_obs_fq_helper_functional(
            t, m.off, m.off, m.lo, m.hi, m.s1, m.z1, 0.01, -128, 127, 0, False, False)
        return per_tensor[0], per_tensor[4], per_row[0], per_row[4], disabled[0]

    module = Op(fn, off=torch.tensor([0]), on=torch.tensor([1]), lo=torch.tensor(-1.3), hi=torch.tensor(0.7),
                s1=torch.tensor([0.02]), z1=torch.tensor([3], dtype=torch.int32),
                lo4=torch.tensor([-1.0, -0.5, -2.0, -0.1]), hi4=torch.tensor([1.0, 0.2, 3.0, 0.3]),
                s4=torch.tensor([0.01, 0.02, 0.03, 0.05]), z4=torch.zeros(4, dtype=torch.int32))
    (e0, e1, e2, e3, e4), (g0, g1, g2, g3, g4), _ = export_and_run(module, [x], opset=21)
    assert_fake_quantized(x.numpy(), e0, g0, e1)
    np.testing.assert_array_equal(e1, g1)
    assert e1 != 0.02  # chosen again from the running min/max, as torch does
    np.testing.assert_array_equal(e3, g3)
    assert_fake_quantized(x.numpy(), e2, g2, e3, 0)
    np.testing.assert_array_equal(e4, g4)
