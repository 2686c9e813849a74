"""Hypothesis tests of the per-tensor quantize/dequantize converters against torch's
reference ops (torch.ao.quantization.fx._decomposed), run in onnxruntime.

Constant parameters (buffers) take the QDQ form, parameters fed at run time the exact
form; both on drawn shapes, dtypes, ranges (narrow ones such as [-127, 127] included),
scales, zero points, NaN and infinities.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import shapes, tensors

from ._check import INT_DTYPES, Op, assert_equal, division_ties, export_and_run, qd

COVERS = {
    "quantized_decomposed::quantize_per_tensor.default",
    "quantized_decomposed::quantize_per_tensor.tensor",
    "quantized_decomposed::quantize_per_tensor.tensor2",
    "quantized_decomposed::dequantize_per_tensor.default",
    "quantized_decomposed::dequantize_per_tensor.tensor",
    "quantized_decomposed::dequantize_per_tensor.tensor2",
}


@st.composite
def qparams(draw, dtypes=INT_DTYPES):
    """(dtype, quant_min, quant_max, scale, zero_point): full, symmetric-narrow or drawn ranges."""
    dtype = draw(st.sampled_from(dtypes))
    info = torch.iinfo(dtype)
    kind = draw(st.sampled_from(["full", "narrow", "drawn"]))
    if kind == "full":
        low, high = info.min, info.max
    elif kind == "narrow":
        low, high = info.min + (1 if info.min < 0 else 0), info.max - (0 if info.min < 0 else 1)
    else:
        low = draw(st.integers(info.min, info.max - 1))
        high = draw(st.integers(low + 1, info.max))
    scale = float(np.float32(draw(st.floats(1e-3, 4.0))))
    zero_point = draw(st.integers(low, high))
    return dtype, low, high, scale, zero_point


@given(x=tensors(shape=shapes(max_rank=4), low=-600.0, high=600.0, specials=True), p=qparams(),
       opset=st.sampled_from([20, 21]))
def test_quantize_per_tensor_constant(x, p, opset):
    """Python scalars: QuantizeLinear where the opset has the type (+ Clip for a narrow
    range), exact arithmetic otherwise (int16/uint16 before opset 21)."""
    dtype, low, high, scale, zp = p
    module = Op(lambda m, t: qd.quantize_per_tensor(t, scale, zp, low, high, dtype))
    (expected,), (got,), onx = export_and_run(module, [x], opset)
    qdq = "QuantizeLinear" in {n.op_type for n in onx.graph.node}
    assert qdq == (dtype in (torch.int8, torch.uint8) or opset >= 21) or not qdq
    assert_equal(expected, got, division_ties(x.numpy(), scale) if qdq else None, x.isnan().numpy())


@given(x=tensors(shape=shapes(max_rank=3), low=-300.0, high=300.0, specials=True), p=qparams(),
       tensor2=st.booleans())
def test_quantize_per_tensor_tensor(x, p, tensor2):
    """Tensor parameters: buffers give the QDQ form, inputs fed at run time the exact one
    (float64 scale, as choose_qparams makes it)."""
    dtype, low, high, scale, zp = p
    s, z = torch.tensor([scale], dtype=torch.float64), torch.tensor([zp])
    if tensor2:
        lo, hi = torch.tensor(low), torch.tensor(high)
        constant = Op(lambda m, t: qd.quantize_per_tensor.tensor2(t, m.s, m.z, m.lo, m.hi, dtype), s=s, z=z, lo=lo, hi=hi)
        runtime = Op(lambda m, t, s_, z_: qd.quantize_per_tensor.tensor2(t, s_, z_, m.lo, m.hi, dtype), lo=lo, hi=hi)
    else:
        constant = Op(lambda m, t: qd.quantize_per_tensor.tensor(t, m.s, m.z, low, high, dtype), s=s, z=z)
        runtime = Op(lambda m, t, s_, z_: qd.quantize_per_tensor.tensor(t, s_, z_, low, high, dtype))
    nan = x.isnan().numpy()
    (expected,), (got,), onx = export_and_run(constant, [x], 21)
    assert_equal(expected, got, division_ties(x.numpy(), scale), nan)
    (expected,), (got,), onx = export_and_run(runtime, [x, s, z], 21)
    assert "QuantizeLinear" not in {n.op_type for n in onx.graph.node}
    assert_equal(expected, got, None, nan)


@given(x=tensors(shape=shapes(max_rank=4), dtype="float16", low=-60.0, high=60.0), p=qparams((torch.int8,)))
def test_quantize_per_tensor_half_input(x, p):
    """torch quantizes a float16 input in float32."""
    dtype, low, high, scale, zp = p
    module = Op(lambda m, t: qd.quantize_per_tensor(t, scale, zp, low, high, dtype))
    (expected,), (got,), _ = export_and_run(module, [x], 21)
    assert_equal(expected, got, division_ties(x.float().numpy(), scale))


@given(seed=st.integers(0, 2**16), shape=shapes(max_rank=4), p=qparams(),
       out_dtype=st.sampled_from([None, torch.float32, torch.float16, torch.bfloat16, torch.float64]),
       opset=st.sampled_from([20, 21]))
def test_dequantize_per_tensor(seed, shape, p, out_dtype, opset):
    """``(x.to(out_dtype) - zero_point) * scale`` exactly, constant and run-time parameters."""
    dtype, low, high, scale, zp = p
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(low, high + 1, shape, generator=g, dtype=torch.int64).to(dtype)
    s, z = torch.tensor([scale], dtype=torch.float64), torch.tensor([zp])
    # a bfloat16 result is read in float32 (exact): onnxruntime's python API has no bfloat16
    widen = (lambda r: r.float()) if out_dtype is torch.bfloat16 else (lambda r: r)
    modules = [
        (Op(lambda m, t: widen(qd.dequantize_per_tensor(t, scale, zp, low, high, dtype, out_dtype=out_dtype))), [q]),
        (Op(lambda m, t: widen(qd.dequantize_per_tensor.tensor(t, m.s, m.z, low, high, dtype, out_dtype=out_dtype)),
            s=s, z=z), [q]),
        (Op(lambda m, t, s_, z_: widen(qd.dequantize_per_tensor.tensor(t, s_, z_, low, high, dtype, out_dtype=out_dtype))),
         [q, s, z]),
        (Op(lambda m, t, s_, z_: widen(qd.dequantize_per_tensor.tensor2(t, s_, z_, m.lo, m.hi, dtype, out_dtype=out_dtype)),
            lo=torch.tensor(low), hi=torch.tensor(high)), [q, s, z]),
    ]
    for module, args in modules:
        (expected,), (got,), onx = export_and_run(module, args, opset)
        assert_equal(expected, got)


def test_dequantize_per_tensor_is_dequantize_linear():
    """Constant parameters give one DequantizeLinear reading the int8 tensor (the QDQ form)."""
    q = torch.randint(-128, 128, (3, 4), dtype=torch.int8)
    module = Op(lambda m, t: qd.dequantize_per_tensor(t, 0.25, -3, -128, 127, torch.int8))
    (expected,), (got,), onx = export_and_run(module, [q])
    assert [n.op_type for n in onx.graph.node] == ["DequantizeLinear"]
    assert_equal(expected, got)


def test_quantize_per_tensor_refuses_a_range_outside_the_dtype():
    from tonnx import UnsupportedError

    x = torch.randn(4)
    module = Op(lambda m, t: qd.quantize_per_tensor.tensor2(t, m.s, m.z, m.lo, m.hi, torch.int8),
                s=torch.tensor([0.1]), z=torch.tensor([0]), lo=torch.tensor(-300), hi=torch.tensor(127))
    with pytest.raises(Exception) as info:
        import tonnx

        tonnx.to_onnx(module, (x,))
    assert isinstance(info.value, UnsupportedError) or "quant_min" in str(info.value)
