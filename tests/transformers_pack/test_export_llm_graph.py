"""The graph of an export-llm folder: what makes its decode step short (issue 18 s3).

One tiny Llama folder (2 layers, hidden 64, 256 positions) exported through the command,
its weights streamed from safetensors (the ``exported`` fixture of conftest.py). Its exactness is test_export_llm.py's greedy check;
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

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import llm_folders  # noqa: E402

pytestmark = pytest.mark.skipif(
    not llm_folders.fused_attention_with_cache(),
    reason="the fused step needs GroupQueryAttention with a cache (tonnx-ortcontrib, onnxruntime 1.32)",
)


def _nodes(onx, op_type):
    return [n for n in onx.graph.node if n.op_type == op_type]


def test_projections_packed_and_rotary_inside_attention(exported):
    _, out, model = exported
    onx = onnx.load(str(out / "model.onnx"), load_external_data=False)
    rewrites = {p.key: p.value for p in onx.metadata_props}["pkg.tonnx.rewrites"]
    assert "ortcontrib:gqa_packed_qkv x2" in rewrites
    assert "llm_position_tables:position_tables x2" in rewrites
    # the bias and lengths from attention_mask: transformers' (B, 1, S, T) mask is gone
    assert "llm_padding_bias:padding_bias x2" in rewrites and "llm_padding_bias:padding_zeroing x2" in rewrites
    assert not _nodes(onx, "GatherND") and not _nodes(onx, "IsInf")
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


def test_padding_adds_no_node_to_a_layer(exported):
    """The bias is attention_mask's row expanded over the queries, once a step; no layer
    zeroes its attention's rows (GroupQueryAttention gives 0 to a row that sees no key:
    the next test), so no CumSum of the mask and no Mul reading the op's output."""
    _, out, _ = exported
    onx = onnx.load(str(out / "model.onnx"), load_external_data=False)
    outputs = {n.output[0] for n in _nodes(onx, "GroupQueryAttention")}
    assert not [n for n in onx.graph.node if set(n.input) & outputs and n.op_type != "MatMul"]
    assert not _nodes(onx, "CumSum") and len(_nodes(onx, "Where")) == 1


def test_attention_gives_zero_to_a_row_that_sees_no_key():
    """What llm/padding_bias.py relies on, asserted on the installed onnxruntime: with a
    cache and ``causal=1``, a query row whose bias is -inf for every key comes out 0 (torch's
    value), not NaN, and the other rows are finite."""
    import onnxruntime as ort
    from onnx import TensorProto as TP
    from onnx import helper as oh

    heads, kv_heads, size, past, new = 2, 1, 16, 2, 3
    names = ["q", "k", "v", "past_k", "past_v", "seqlens", "total", *[""] * 3, "bias", *[""] * 5, "queries"]
    node = oh.make_node("GroupQueryAttention", names, ["out", "present_k", "present_v"], domain="com.microsoft",
                        num_heads=heads, kv_num_heads=kv_heads, causal=1, scale=0.25)
    inputs = [oh.make_tensor_value_info(n, TP.FLOAT, None) for n in ("q", "k", "v", "past_k", "past_v", "bias")]
    inputs += [oh.make_tensor_value_info(n, TP.INT32, None) for n in ("seqlens", "total", "queries")]
    outputs = [oh.make_tensor_value_info(n, TP.FLOAT, None) for n in node.output]
    model = oh.make_model(oh.make_graph([node], "gqa", inputs, outputs), ir_version=10,
                          opset_imports=[oh.make_opsetid("", 21), oh.make_opsetid("com.microsoft", 1)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    mask = np.array([[0, 0, 0, 0, 1], [0, 1, 0, 1, 1]], dtype=bool)  # query rows see keys j <= 2 + i
    feeds = {"q": rng.standard_normal((2, new, heads * size), np.float32),
             "k": rng.standard_normal((2, new, kv_heads * size), np.float32),
             "v": rng.standard_normal((2, new, kv_heads * size), np.float32),
             "past_k": rng.standard_normal((2, kv_heads, past, size), np.float32),
             "past_v": rng.standard_normal((2, kv_heads, past, size), np.float32),
             "bias": np.where(mask, 0, -np.inf).astype(np.float32)[:, None, None].repeat(new, 2),
             "seqlens": np.full(2, past + new - 1, np.int32), "total": np.array(past + new, np.int32),
             "queries": np.full(2, new, np.int32)}  # fmt: skip
    out = session.run(["out"], feeds)[0]
    assert (out[0, :2] == 0).all()  # rows 0 and 1 of the first prompt: keys 0-3 are padding
    assert np.isfinite(out).all() and (out[0, 2] != 0).any() and (out[1] != 0).any(axis=-1).all()


def test_tables_hold_transformers_rotary_values(exported):
    _, out, model = exported
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

    _, out, model = exported
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


def _torch_step(model, ids, mask, positions, cache):
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                    use_cache=True)
    return out.logits.numpy(), out.past_key_values


def test_left_padding_gives_torchs_numbers(exported):
    """A batch of two prompts, the first left-padded (its first two queries see no key:
    torch gives them zero attention), then one decode step: logits and cache equal
    torch's, so the bias read from attention_mask alone is the mask torch applies."""
    import onnxruntime as ort
    from transformers import DynamicCache

    _, out, model = exported
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    config = model.config
    layers, heads = config.num_hidden_layers, config.num_key_value_heads
    ids = torch.tensor([[0, 0, 5, 17, 42], [3, 9, 11, 7, 99]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "position_ids": positions.numpy()}
    for i in range(layers):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = np.zeros((2, heads, 0, 16), np.float32)
    got = session.run(None, feeds)
    want, cache = _torch_step(model, ids, mask, positions, DynamicCache(config=config))
    np.testing.assert_allclose(got[0], want, atol=1e-4, rtol=1e-4)
    # one decode step on the cache the graph wrote
    step_ids, step_mask = torch.tensor([[8], [4]]), torch.cat([mask, torch.ones(2, 1, dtype=mask.dtype)], -1)
    step_pos = positions[:, -1:] + 1
    feeds = {"input_ids": step_ids.numpy(), "attention_mask": step_mask.numpy(), "position_ids": step_pos.numpy()}
    names = [o.name for o in session.get_outputs()]
    for name, value in zip(names[1:], got[1:]):
        feeds[name.replace("present", "past_key_values")] = value
    got_step = session.run(None, feeds)
    want_step, cache = _torch_step(model, step_ids, step_mask, step_pos, cache)
    np.testing.assert_allclose(got_step[0], want_step, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(got_step[1], cache.layers[0].keys.numpy(), atol=1e-5, rtol=1e-5)


def test_residual_adds_fused_into_the_norms(exported):
    """Every residual Add the next RMSNorm reads is SkipSimplifiedLayerNormalization's
    (llm/skip_norm.py): two a layer; the first norm (of the embedding) keeps its chain."""
    _, out, model = exported
    onx = onnx.load(str(out / "model.onnx"), load_external_data=False)
    fused = _nodes(onx, "SkipSimplifiedLayerNormalization")
    assert len(fused) == 2 * model.config.num_hidden_layers
    eps = model.config.rms_norm_eps
    assert all(np.float32(onnx.helper.get_attribute_value(n.attribute[0])) == np.float32(eps) for n in fused)
    # each one's sum (output 3) is what the next residual Add or norm reads
    readers = {i for n in onx.graph.node for i in n.input}
    assert all(n.output[3] and n.output[3] in readers for n in fused[:-1])
    assert len(_nodes(onx, "ReduceMean")) == 1  # the first input_layernorm only
