"""4-bit initializers (INT4/UINT4): the builder writes them two values a byte, as ONNX
stores them (onnx's own packing is the reference), inline and in an external data file."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from onnx import numpy_helper

import tonnx
from tonnx.builder._packed4 import packed

from ._check import Op

pytest.importorskip("torchao", reason="torchao is not installed: pip install 'torchao>=0.18' (tonnx[test] has it)")

import torchao.quantization.quant_primitives  # noqa: E402,F401  registers the torchao:: ops

FOUR_BIT = {"int4": (ml_dtypes.int4, -8, 7), "uint4": (ml_dtypes.uint4, 0, 15)}


@given(kind=st.sampled_from(sorted(FOUR_BIT)), shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
       seed=st.integers(0, 2**16))
def test_packed_as_onnx_packs(kind, shape, seed):
    """Odd and even counts, empty and 0-d tensors: the bytes onnx.numpy_helper writes."""
    dtype, low, high = FOUR_BIT[kind]
    values = np.random.default_rng(seed).integers(low, high + 1, shape).astype(dtype)
    assert packed(values).tobytes() == numpy_helper.from_array(values).raw_data


@pytest.mark.parametrize("external_data", [False, True])
def test_four_bit_weight_in_a_file(tmp_path, external_data):
    """A 128x256 int4 weight (16 KiB packed: the writer streams it, or puts it in the data
    file): read back by onnx as the same values, run by onnxruntime as torch computes, and
    the weight takes half a byte a value in the file."""
    g = torch.Generator().manual_seed(0)
    w = torch.randint(-8, 8, (128, 256), generator=g, dtype=torch.int8)
    scale = torch.rand(128, 8, generator=g) + 0.01
    module = Op(lambda m, t: t @ ao_dequantize(m.w, m.s).T, w=w, s=scale)
    x = torch.randn(2, 256)
    path = tmp_path / "int4.onnx"
    tonnx.to_onnx(module, (x,), filename=path, external_data=external_data, target_opset=21)
    onx = onnx.load(path)
    (weight,) = [i for i in onx.graph.initializer if i.data_type == onnx.TensorProto.INT4]
    np.testing.assert_array_equal(numpy_helper.to_array(weight).astype(np.int8), w.numpy().T)
    total = sum(f.stat().st_size for f in tmp_path.iterdir())
    assert total < 128 * 256 // 2 + 8 * 128 * 4 + 4096 * 2, total  # packed weight, scales, headers and alignment
    with torch.no_grad():
        expected = module(x).numpy()
    options = onnxruntime.SessionOptions()  # the graph's arithmetic: no fusion into MatMulNBits
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    # float32 sums of 256 terms of up to |140|: a few float32 steps of the largest output
    np.testing.assert_allclose(got, expected, atol=4 * np.spacing(np.abs(expected).max()), rtol=1e-5)


def ao_dequantize(w, s):
    return torch.ops.torchao.dequantize_affine(w, [1, 32], s, None, torch.int8, -8, 7)
