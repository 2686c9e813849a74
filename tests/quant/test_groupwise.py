"""Hypothesis tests of the group-wise (per channel group, 2-D) quantize/dequantize
converters against torch's reference ops, run in onnxruntime: drawn row lengths, group
sizes, int4 and int8 ranges, float32/float64 scales, with or without zero points."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import make_tensor

from ._check import Op, assert_equal, export_and_run, qd

COVERS = {
    "quantized_decomposed::quantize_per_channel_group.default",
    "quantized_decomposed::dequantize_per_channel_group.default",
}


@given(rows=st.integers(1, 4), groups=st.integers(1, 3), group_size=st.sampled_from([2, 4, 8, 32]),
       bits=st.sampled_from([4, 8]), seed=st.integers(0, 2**16),
       scale_dtype=st.sampled_from([torch.float32, torch.float64]), with_zero=st.booleans())
def test_per_channel_group(rows, groups, group_size, bits, seed, scale_dtype, with_zero):
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    g = torch.Generator().manual_seed(seed)
    x = make_tensor(seed, (rows, groups * group_size), "float32", -5.0, 5.0)
    scales = (torch.rand(rows * groups, generator=g) * 0.5 + 1e-3).to(scale_dtype)
    zero_points = torch.randint(low, high + 1, (rows * groups,), generator=g)

    def fn(m, t, s, z):
        q = qd.quantize_per_channel_group(t, s, z, low, high, torch.int8, group_size)
        d = qd.dequantize_per_channel_group(q, s, z if with_zero else None, low, high, torch.int8, group_size,
                                            torch.float32)
        return q, d

    expected, got, _ = export_and_run(Op(fn), [x, scales, zero_points])
    for e, o in zip(expected, got):
        assert_equal(e, o)
