"""Mixtral, Qwen3-MoE and DeepSeek-V3 (tiny, random weights) exported with dynamic batch and
sequence; onnxruntime matches torch within 1e-4 at two shapes (left padding in one row)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from moe_models import build, cache_inputs, inputs

import tonnx
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
        dispatcher=tonnx.Dispatcher(packs=["no:ortcontrib"]),  # which would route the blocks to its MoE
        atol=1e-4,
        rtol=1e-4,
    )
    converters = {
        p.value for node in onx.graph.node for p in node.metadata_props if p.key == "pkg.tonnx.converter"
    }
    assert any(c.startswith("transformers:") for c in converters), sorted(converters)
    dims = [d.dim_param or d.dim_value for d in onx.graph.input[0].type.tensor_type.shape.dim]
    assert all(isinstance(d, str) and d for d in dims), dims  # batch and sequence stay symbolic


CACHE_DYNAMIC = {
    "input_ids": {0: "batch", 1: "seq"},
    "attention_mask": {0: "batch", 1: "total"},
    "position_ids": {0: "batch", 1: "seq"},
    "past_key_values": {0: "batch", 2: "past"},
}


def test_mixtral_with_its_kv_cache():
    """One export serves the first step (empty cache) and later ones: logits and presents."""
    model = build("mixtral").model
    # ortcontrib (if installed) would turn the expert blocks into its MoE op
    dispatcher = tonnx.Dispatcher(packs=["no:ortcontrib"])
    onx = tonnx.to_onnx(model, kwargs=cache_inputs(2, 3, 5), dynamic_shapes=CACHE_DYNAMIC, dispatcher=dispatcher)
    converters = {p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.converter"}
    assert any(c.startswith("transformers:") for c in converters), sorted(converters)
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()][0] == "logits"
    for batch, seq, past in ((3, 1, 9), (1, 4, 0)):
        step = cache_inputs(batch, seq, past, seed=1)
        feeds = {k: v.numpy() for k, v in step.items() if k != "past_key_values"}
        for i, layer in enumerate(step["past_key_values"].layers):
            feeds[f"past_key_values.{i}.key"] = layer.keys.numpy()
            feeds[f"past_key_values.{i}.value"] = layer.values.numpy()
        with torch.no_grad():
            out = model(**step, use_cache=True)
        want = [out.logits] + [t for layer in out.past_key_values.layers for t in (layer.keys, layer.values)]
        got = session.run(None, feeds)
        assert len(got) == len(want) == 5
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w.numpy(), atol=1e-4, rtol=1e-4)
        assert got[1].shape[2] == past + seq  # the present cache grew by the step
