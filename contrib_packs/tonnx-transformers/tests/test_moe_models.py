"""Mixtral, Qwen3-MoE and DeepSeek-V3 (tiny, random weights) exported with dynamic batch and
sequence; onnxruntime matches torch within 1e-4 at two shapes (left padding in one row)."""

from __future__ import annotations

import pytest
import torch
from moe_models import build, inputs

from tonnx.testing import check_model

KEY = "transformers::grouped_mm_fallback.default"


@pytest.mark.parametrize("name", ["mixtral", "qwen3_moe", "deepseek_v3"])
def test_moe_decoder_dynamic_batch_and_sequence(name):
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    onx = check_model(
        build(name),
        inputs(2, 6),
        other_inputs=[inputs(3, 9, seed=1)],
        dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}),
        expect_ops=[KEY, "aten::histc.default"],
        atol=1e-4,
        rtol=1e-4,
    )
    converters = {
        p.value for node in onx.graph.node for p in node.metadata_props if p.key == "pkg.tonnx.converter"
    }
    assert any(c.startswith("transformers:") for c in converters), sorted(converters)
    dims = [d.dim_param or d.dim_value for d in onx.graph.input[0].type.tensor_type.shape.dim]
    assert all(isinstance(d, str) and d for d in dims), dims  # batch and sequence stay symbolic
