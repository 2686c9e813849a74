"""Hypothesis tests of the dynamic-quantization converters (parameters computed at run time:
choose_qparams per tensor and per token, quantize/dequantize per token) against torch's
reference ops, run in onnxruntime. The exact form: results equal torch's bit for bit."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import shapes, tensors

from ._check import Op, assert_equal, export_and_run, qd

COVERS = {
    "quantized_decomposed::choose_qparams.tensor",
    "quantized_decomposed::choose_qparams_symmetric.tensor",
    "quantized_decomposed::choose_qparams_per_token.default",
    "quantized_decomposed::choose_qparams_per_token_asymmetric.default",
    "quantized_decomposed::quantize_per_token.default",
    "quantized_decomposed::dequantize_per_token.default",
}

RANGES = [(torch.int8, -128, 127), (torch.int8, -127, 127), (torch.uint8, 0, 255), (torch.int16, -32768, 32767)]


@given(x=tensors(shape=shapes(min_rank=1, max_rank=4), low=-50.0, high=50.0),
       r=st.sampled_from(RANGES), eps=st.sampled_from([2**-12, 1e-5, torch.finfo(torch.float32).eps]),
       symmetric=st.booleans(), offset=st.floats(-40.0, 40.0))
def test_choose_qparams_then_quantize(x, r, eps, symmetric, offset):
    """choose_qparams(.tensor / _symmetric.tensor) and the quantize/dequantize they feed, as
    PT2E's dynamic configs use them (no NaN: torch's min/max check refuses it)."""
    dtype, low, high = r
    x = x + offset
    choose = qd.choose_qparams_symmetric.tensor if symmetric else qd.choose_qparams.tensor

    def fn(m, t):
        scale, zero_point = choose(t, low, high, eps, dtype)
        q = qd.quantize_per_tensor.tensor(t, scale, zero_point, low, high, dtype)
        return scale, zero_point, q, qd.dequantize_per_tensor.tensor(q, scale, zero_point, low, high, dtype)

    expected, got, _ = export_and_run(Op(fn), [x], 21)
    for e, o in zip(expected, got):
        assert_equal(e, o)


@given(x=tensors(shape=shapes(min_rank=1, max_rank=4), low=-20.0, high=20.0),
       half=st.booleans(), offset=st.floats(-10.0, 10.0))
def test_choose_qparams_per_token(x, half, offset):
    x = x + offset
    x = x.half() if half else x
    expected, got, _ = export_and_run(Op(lambda m, t: qd.choose_qparams_per_token(t, torch.int8)), [x])
    # torch's eager kernel returns float32 scales and zero points where its meta says
    # float64/int64 (the exported graph's types): values compared in float64
    assert_equal(expected[0].astype("float64"), got[0])
    assert_equal(expected[1].astype("int64"), got[1])


@given(x=tensors(shape=shapes(min_rank=1, max_rank=4), low=-20.0, high=20.0), offset=st.floats(-30.0, 30.0),
       r=st.sampled_from(RANGES[:3]))
def test_per_token_asymmetric_round_trip(x, offset, r):
    """choose_qparams_per_token_asymmetric (float64 scales, int64 zero points) feeding
    quantize_per_token and dequantize_per_token, computed in float64 as torch promotes."""
    dtype, low, high = r
    x = x + offset

    def fn(m, t):
        scales, zero_points = qd.choose_qparams_per_token_asymmetric(t, dtype)
        q = qd.quantize_per_token(t, scales, zero_points, low, high, dtype)
        return scales, zero_points, q, qd.dequantize_per_token(q, scales, zero_points, low, high, dtype, torch.float32)

    expected, got, _ = export_and_run(Op(fn), [x])
    for e, o in zip(expected, got):
        assert_equal(e, o)


@given(x=tensors(shape=(3, 5), low=-20.0, high=20.0, specials=True),
       scale_dtype=st.sampled_from([torch.float32, torch.float64]), seed=st.integers(0, 1000),
       out_dtype=st.sampled_from([torch.float32, torch.float16]))
def test_quantize_dequantize_per_token(x, scale_dtype, seed, out_dtype):
    """Given float32 or float64 scales (promotion decides the compute type) and NaN/inf."""
    g = torch.Generator().manual_seed(seed)
    scales = (torch.rand(3, 1, generator=g) + 0.01).to(scale_dtype)
    zero_points = torch.randint(-10, 10, (3, 1), generator=g)

    def fn(m, t, s, z):
        q = qd.quantize_per_token(t, s, z, -128, 127, torch.int8)
        return q, qd.dequantize_per_token(q, s, z, -128, 127, torch.int8, out_dtype)

    expected, got, _ = export_and_run(Op(fn), [x, scales, zero_points])
    nan = x.isnan().numpy()
    assert_equal(expected[0], got[0], None, nan)
    assert_equal(expected[1], got[1], None, nan)
