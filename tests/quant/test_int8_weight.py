"""The cast of a constant 8-bit matrix to float32 (torchao's int8 weight-only linears) is
DequantizeLinear(w, 1.0): the same values, checked against torch in onnxruntime, with the
weight kept an 8-bit initializer (a run-time cast is the same DequantizeLinear)."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

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
