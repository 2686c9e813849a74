"""Causal LMs exported with their KV cache and the pack: attention with the cache is one
GroupQueryAttention reading ``past_key_values.*`` and writing ``present.*``; onnxruntime
matches torch at cache lengths 0, 1 and 37, batch 1 and 3, left and right padding, and a
greedy loop from an empty cache gives generate()'s tokens (tests/models/test_kv_cache.py's
checks, on the pack's graph). Before onnxruntime 1.32 (the op's ``query_seqlens``) attention
with a cache keeps the standard graph, and the same checks hold."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from tonnx_ortcontrib._target import resolve

import tonnx
from tests.models import transformer_models as T
from tests.models.test_kv_cache import (
    DYNAMIC,
    _check_greedy,
    _check_steps,
    _feeds,
    _inputs,
    _mask,
)

#: the installed onnxruntime, which the pack targets by default
TARGET = resolve({})

CASES = [
    (0, 1, 4, "left"), (0, 3, 4, "right"), (0, 3, 4, "left"), (1, 3, 1, "left"), (1, 1, 3, "right"),
    (37, 3, 1, "left"), (37, 3, 2, "right"), (37, 1, 1, "left"), (37, 3, 1, "right"), (37, 3, 3, "left"),
]  # fmt: skip


def _export(model):
    return tonnx.to_onnx(model, kwargs=_inputs(model.config, 2, 3, 5, "left", 0), dynamic_shapes=DYNAMIC)


def _model(name: str):
    """The model-list causal LM ``name``, or a Qwen3 of the same sizes (its per-head q/k norm)."""
    if name != "qwen3":
        return T.MODELS[name]()[0].model
    import transformers

    config = transformers.Qwen3Config(**T._decoder_kwargs(), head_dim=16)
    return T._causal_lm(config, 0, 2, 12)[0].model


def _check_fused(onx, layers: int, split: bool = False) -> None:
    """One GroupQueryAttention per layer, reading the cache inputs, writing the presents;
    no Split (``split``: only the packed projection's, Qwen3)."""
    nodes = [n for n in onx.graph.node if n.op_type == "GroupQueryAttention"]
    assert len(nodes) == layers
    for i, node in enumerate(nodes):
        assert list(node.input[3:5]) == [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        assert list(node.output[1:3]) == [f"present.{i}.key", f"present.{i}.value"]
    ops = [n.op_type for n in onx.graph.node]
    assert "Softmax" not in ops and ops.count("Split") == (layers if split else 0)
    rewrites = {p.key: p.value for p in onx.metadata_props}["pkg.tonnx.rewrites"]
    assert f"ortcontrib:gqa_kv_cache x{layers}" in rewrites


@pytest.mark.parametrize("name", ["llama", "mistral", "qwen2", "gpt2", "qwen3"])
def test_causal_lm_with_cache(name):
    model = _model(name)
    config = model.config
    onx = _export(model)
    if TARGET.gqa_with_cache:
        _check_fused(onx, config.num_hidden_layers, split=name == "qwen3")
        if name == "qwen3":  # q, k and v one MatMul through the per-head norm, rotary in the op
            rewrites = {p.key: p.value for p in onx.metadata_props}["pkg.tonnx.rewrites"]
            assert f"ortcontrib:gqa_packed_qkv_norm x{config.num_hidden_layers}" in rewrites
            assert "RotaryEmbedding" not in {n.op_type for n in onx.graph.node}
    else:  # the standard graph: attention reads the cache through Concat, not GroupQueryAttention
        assert "GroupQueryAttention" not in {n.op_type for n in onx.graph.node}
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    _check_steps(model, sess, CASES)
    _check_greedy(model, sess)


@pytest.mark.parametrize("name", ["llama", "gpt2", "qwen3"])
def test_reference_kernels_run_the_cache_graph(name):
    """The pack's reference kernels (past, query_seqlens, position_ids) give onnxruntime's
    results on the exported graph: Llama (rotary inside the op), GPT2 (split projection),
    Qwen3 (separate query, key and value, rotary inside the op)."""
    from tonnx.testing import run_onnxruntime, run_reference

    model = _model(name)
    onx = _export(model)
    for past, batch, seq, padding in [(5, 2, 1, "left"), (0, 2, 3, "left"), (4, 1, 2, "right")]:
        feeds = _feeds(_inputs(model.config, batch, seq, past, padding, seed=past))
        ordered = [feeds[i.name] for i in onx.graph.input]
        for got, want in zip(run_reference(onx, ordered), run_onnxruntime(onx, ordered)):
            np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


# -- which masks the op's own causal mask may take: proven on the FX graph ------------------


class CachedAttention(torch.nn.Module):
    """sdpa of S new queries over T = P + S keys with HF's mask ``kv_idx <= q_idx``,
    ``q_idx = arange(S) + P + shift`` (shift > 0 shows later keys: not causal)."""

    def __init__(self, shift=0, mode="hf"):
        super().__init__()
        self.shift, self.mode = shift, mode

    def forward(self, q, past, new, mask=None):
        k, v = torch.cat([past, new], dim=2), torch.cat([past * 2, new - 1], dim=2)
        length, size = q.shape[2], k.shape[2]
        if self.mode == "is_causal":
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        if self.mode == "input":
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        if self.mode == "none":
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)
        kv_idx = torch.arange(size)
        q_idx = torch.arange(length) + (size - length) + self.shift
        keep = kv_idx[None, None, None, :] <= q_idx[None, None, :, None]
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)


@pytest.mark.parametrize(
    "shift, mode, fused",
    [(0, "hf", True), (-2, "hf", True), (1, "hf", False), (0, "is_causal", True), (0, "input", False), (0, "none", False)],
)
def test_only_provably_causal_masks_fuse(shift, mode, fused):
    from tonnx.testing import check_model

    gen = torch.Generator().manual_seed(0)
    q, past, new = (torch.randn(2, 2, n, 16, generator=gen) for n in (3, 5, 3))
    args = (q, past, new) if mode != "input" else (q, past, new, torch.rand(2, 1, 3, 8, generator=gen) > 0.3)
    onx = check_model(CachedAttention(shift, mode), args, atol=1e-5)
    ops = [n.op_type for n in onx.graph.node]
    fused = fused and TARGET.gqa_with_cache  # before 1.32 attention with a cache stays standard
    assert ("GroupQueryAttention" in ops) == fused, ops
    if fused:
        (node,) = [n for n in onx.graph.node if n.op_type == "GroupQueryAttention"]
        assert node.input[3] == "past" and "Concat" not in ops and "Split" not in ops  # the caches folded in


# -- what the converter relies on: onnxruntime's op against torch, one node ----------------


def _hf_mask(batch: int, length: int, past: int, padding: str) -> torch.Tensor:
    """HF's (B, 1, L, P + L) bool mask: causal after the cache, row i with 2i padded keys."""
    keep = _mask(batch, past + length, padding).bool()
    causal = torch.arange(past + length)[None, :] <= torch.arange(length)[:, None] + past
    return causal[None, None] & keep[:, None, None, :]


@pytest.mark.skipif(not TARGET.gqa_with_cache, reason="query_seqlens is onnxruntime 1.32's input")
@pytest.mark.parametrize("length, past", [(1, 5), (1, 37), (3, 5), (4, 1), (4, 0), (1, 0)])
@pytest.mark.parametrize("batch, padding", [(1, "left"), (3, "left"), (3, "right")])
def test_onnxruntime_op_with_cache_equals_torch(length, past, batch, padding):
    """causal=1, seqlens_k = P + L - 1 and total_sequence_length = P + L for every row,
    query_seqlens = L, the mask as bias (dead rows 0, output zeroed there): torch's sdpa
    over cat(past, new), and the presents are that cat. (Without query_seqlens, onnxruntime
    refuses L > 1 new tokens after a cache for a batch of more than one.)"""
    from onnx import TensorProto
    from onnx import helper as oh

    heads, kv_heads, size = 4, 2, 16
    gen = torch.Generator().manual_seed(length + past + batch)
    q = torch.randn(batch, heads, length, size, generator=gen)
    k, v = (torch.randn(batch, kv_heads, length, size, generator=gen) for _ in range(2))
    pk, pv = (torch.randn(batch, kv_heads, past, size, generator=gen) for _ in range(2))
    mask = _hf_mask(batch, length, past, padding)
    keys, values = torch.cat([pk, k], 2), torch.cat([pv, v], 2)
    want = torch.nn.functional.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=True)
    dead = ~mask.any(-1, keepdim=True)
    names = ["q", "k", "v", "pk", "pv", "seqlens", "total", "", "", "", "bias", "", "", "", "", "", "qs"]
    node = oh.make_node("GroupQueryAttention", names, ["out", "present_key", "present_value"],
                        domain="com.microsoft", num_heads=heads, kv_num_heads=kv_heads, causal=1)  # fmt: skip
    feeds = {
        "q": q.transpose(1, 2).reshape(batch, length, -1).numpy(),
        "k": k.transpose(1, 2).reshape(batch, length, -1).numpy(),
        "v": v.transpose(1, 2).reshape(batch, length, -1).numpy(),
        "pk": pk.numpy(), "pv": pv.numpy(),
        "seqlens": np.full((batch,), past + length - 1, np.int32),
        "total": np.array(past + length, np.int32),
        "bias": torch.where(mask | dead, 0.0, float("-inf")).numpy(),
        "qs": np.full((batch,), length, np.int32),
    }  # fmt: skip
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    inputs = [oh.make_tensor_value_info(n, types[a.dtype], a.shape) for n, a in feeds.items()]
    outputs = [oh.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in node.output]
    model = oh.make_model(
        oh.make_graph([node], "gqa", inputs, outputs),
        opset_imports=[oh.make_opsetid("", 18), oh.make_opsetid("com.microsoft", 1)], ir_version=10,
    )  # fmt: skip
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out, present_key, present_value = sess.run(None, feeds)
    out = out.reshape(batch, length, heads, size).transpose(0, 2, 1, 3) * (~dead).numpy()
    np.testing.assert_allclose(out, want.numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_array_equal(present_key, keys.numpy())
    np.testing.assert_array_equal(present_value, values.numpy())
