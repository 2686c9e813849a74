"""Hypothesis tests of the pack's converter against torch eager, through tonnx's public kit:
in onnx's reference evaluator (with the pack's reference kernel) and in onnxruntime (with
the pack's onnxruntime-extensions kernel)."""

from __future__ import annotations

import pytest
import tonnx_example_pack
import torch
from hypothesis import given
from hypothesis import strategies as st
from tonnx_example_pack.ops import soft_clip

import tonnx
from tonnx.testing import check_model, check_op, shapes, tensors, tolerance

COVERS = {"tonnx_example::soft_clip.default"}
KEY = "tonnx_example::soft_clip.default"
bounds = st.floats(0.25, 8.0)
runtimes = pytest.mark.parametrize("runtime", ["reference", "onnxruntime"])


def _runtime(runtime: str) -> dict:
    if runtime == "onnxruntime":
        return {"session_options": tonnx_example_pack.session_options()}
    return {"runtime": "reference"}


@runtimes
@given(x=tensors(shape=shapes(max_rank=3), low=-20.0, high=20.0, specials=True), bound=bounds)
def test_soft_clip(runtime, x, bound):
    onx = check_op(
        soft_clip, [x], constants={1: bound}, expect_op=KEY, **tolerance(x.dtype), **_runtime(runtime)
    )
    nodes = [(n.domain, n.op_type) for n in onx.graph.node]
    assert nodes == [("com.example.tonnx", "SoftClip")]
    assert {o.domain: o.version for o in onx.opset_import}["com.example.tonnx"] == 1


@runtimes
@given(batch=st.integers(1, 5), bound=bounds)
def test_soft_clip_dynamic_batch(runtime, batch, bound):
    module = tonnx.testing.op_module(soft_clip, 1, {1: bound})
    x, other = torch.randn(2, 3) * 5, torch.randn(batch, 3) * 5
    onx = check_model(
        module, (x,), other_inputs=[(other,)], dynamic_shapes=({0: "batch"},),
        expect_ops=[KEY], **_runtime(runtime),
    )
    assert onx.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


@runtimes
def test_demo_model_matches_torch(runtime):
    model, args = tonnx_example_pack.demo()
    onx = check_model(model, args, expect_ops=[KEY, "aten::linear.default"], **_runtime(runtime))
    ops = [n.op_type for n in onx.graph.node]
    assert "SoftClip" in ops and ops.count("Gemm") + ops.count("MatMul") >= 2


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
def test_other_dtypes_are_refused(dtype):
    x = torch.randn(2, 3, dtype=dtype)
    with pytest.raises(tonnx.UnsupportedError, match="float32 kernels only"):
        check_op(soft_clip, [x], constants={1: 1.0}, expect_op=KEY, runtime="reference")
