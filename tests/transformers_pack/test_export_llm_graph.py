"""The graph of an export-llm folder: what makes its decode step short (issue 18 s3).

One tiny Llama folder (2 layers, hidden 64, 256 positions) exported through the command,
its weights streamed from safetensors. Its exactness is test_export_llm.py's greedy check;
here, the shape of the step: q/k/v packed into one MatMul whose weight was derived while
the checkpoint streamed, rotary inside GroupQueryAttention reading constant tables of every
position (the same numbers as transformers' rotary embedding), and a position past the
tables refused by onnxruntime rather than computed wrong.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from tonnx.cli import main

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import llm_folders  # noqa: E402

pytestmark = pytest.mark.skipif(
    not llm_folders.fused_attention_with_cache(),
    reason="the fused step needs GroupQueryAttention with a cache (tonnx-ortcontrib, onnxruntime 1.32)",
)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("llm")
    source, out = root / "llama", root / "llama-onnx"
    model = llm_folders.save_folder("llama", source)
    assert main(["export-llm", str(source), "-o", str(out), "-q"]) == 0
    return out, model


def _nodes(onx, op_type):
    return [n for n in onx.graph.node if n.op_type == op_type]


def test_projections_packed_and_rotary_inside_attention(exported):
    out, model = exported
    onx = onnx.load(str(out / "model.onnx"), load_external_data=False)
    rewrites = {p.key: p.value for p in onx.metadata_props}["pkg.tonnx.rewrites"]
    assert "ortcontrib:gqa_packed_qkv x2" in rewrites
    assert "llm_position_tables:position_tables x2" in rewrites
    attention = _nodes(onx, "GroupQueryAttention")
    assert len(attention) == 2
    assert all({a.name: a.i for a in n.attribute}.get("do_rotary") == 1 for n in attention)
    assert not _nodes(onx, "Cos") and not _nodes(onx, "Sin") and not _nodes(onx, "RotaryEmbedding")
    # query, key and value of each layer: one MatMul of the hidden state
    layer = model.config.num_attention_heads + 2 * model.config.num_key_value_heads
    head = model.config.hidden_size // model.config.num_attention_heads
    producers = {o: n for n in onx.graph.node for o in n.output}
    for n in attention:
        assert producers[n.input[0]].op_type == "MatMul" and n.input[1] == n.input[2] == ""
    weights = {i.name: i for i in onx.graph.initializer}
    packed = weights[producers[attention[0].input[0]].input[1]]
    assert tuple(packed.dims) == (model.config.hidden_size, layer * head)
    assert attention[0].input[9] == "position_ids"


def test_tables_hold_transformers_rotary_values(exported):
    out, model = exported
    onx = onnx.load(str(out / "model.onnx"))
    from onnx.numpy_helper import to_array

    weights = {i.name: to_array(i) for i in onx.graph.initializer}
    gqa = _nodes(onx, "GroupQueryAttention")[0]
    cos, sin = weights[gqa.input[7]], weights[gqa.input[8]]
    rows = model.config.max_position_embeddings
    assert cos.shape == sin.shape == (rows, 8)
    positions = torch.arange(rows)[None]
    want_cos, want_sin = model.model.rotary_emb(torch.zeros(1, rows, 64), positions)
    np.testing.assert_array_equal(cos, want_cos[0, :, :8].numpy())
    np.testing.assert_array_equal(sin, want_sin[0, :, :8].numpy())


def test_a_position_past_the_tables_is_refused(exported):
    """genai never runs a position at or past context_length; a direct caller that does
    gets onnxruntime's error, not numbers from outside the tables."""
    import onnxruntime as ort

    out, model = exported
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    past = 3
    feeds = {"input_ids": np.array([[5]]), "attention_mask": np.ones((1, past + 1), np.int64)}
    for i in session.get_inputs():
        if i.name.startswith("past_key_values"):
            feeds[i.name] = np.zeros((1, model.config.num_key_value_heads, past, 16), np.float32)
    rows = model.config.max_position_embeddings
    feeds["position_ids"] = np.array([[rows - 1]])
    session.run(None, feeds)
    feeds["position_ids"] = np.array([[rows]])
    with pytest.raises(Exception, match="out of range"):
        session.run(None, feeds)
