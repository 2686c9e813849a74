"""The pack's reference kernels (tonnx_ortcontrib.reference) against onnxruntime: node by
node over the attribute and input combinations the pack emits, then on graphs it exports."""

from __future__ import annotations

import hypothesis.strategies as st
import numpy as np
import pytest
import torch
from hypothesis import given
from onnx import TensorProto
from onnx import helper as oh
from test_ortcontrib_attention import calls
from test_ortcontrib_rewrites import Block
from tonnx_ortcontrib._target import resolve

import tonnx
from tonnx.testing import (
    ExtendedReferenceEvaluator,
    reference_kernels,
    run_onnxruntime,
    run_reference,
)

MS = "com.microsoft"
#: the cache form's query_seqlens (input 16) is onnxruntime 1.32's; the pack emits it only then
NEEDS_QUERY_SEQLENS = pytest.mark.skipif(
    not resolve({}).gqa_with_cache, reason="GroupQueryAttention's query_seqlens input is onnxruntime 1.32's"
)
GQA_INPUTS = (
    "query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length",
    "cos_cache", "sin_cache", "position_ids", "attention_bias", "head_sink", "k_scale",
    "v_scale", "q_norm_weight", "k_norm_weight", "query_seqlens",
)  # fmt: skip
_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
          np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.int32): TensorProto.INT32,
          np.dtype(np.int64): TensorProto.INT64}  # fmt: skip


def _model(op: str, feeds: dict, n_outputs: int, **attributes):
    """One ``com.microsoft`` node reading ``feeds`` (by input name, others empty)."""
    names = GQA_INPUTS if op == "GroupQueryAttention" else ("input", "position_ids", "cos_cache", "sin_cache")
    inputs = [n if n in feeds else "" for n in names]
    while inputs[-1] == "":
        inputs.pop()
    outputs = [f"out{i}" for i in range(n_outputs)]
    node = oh.make_node(op, inputs, outputs, domain=MS, **attributes)
    dtype = _TYPES[next(iter(feeds.values())).dtype]
    graph = oh.make_graph(
        [node], op,
        [oh.make_tensor_value_info(n, _TYPES[a.dtype], a.shape) for n, a in feeds.items()],
        [oh.make_tensor_value_info(o, dtype, None) for o in outputs],
    )  # fmt: skip
    opsets = [oh.make_opsetid("", 18), oh.make_opsetid(MS, 1)]
    return oh.make_model(graph, opset_imports=opsets, ir_version=10)


def _same(model, feeds: list, atol: float = 1e-4):
    """The reference kernels and onnxruntime give the same outputs; returns them."""
    expected = run_onnxruntime(model, feeds)
    got = run_reference(model, feeds)
    assert len(got) == len(expected)
    for i, (e, g) in enumerate(zip(expected, got)):
        assert g.dtype == e.dtype and g.shape == e.shape, f"output {i}: {g.dtype}{g.shape} != {e.dtype}{e.shape}"
        np.testing.assert_allclose(g, e, atol=atol, rtol=atol, err_msg=f"output {i}")
    return got


def gqa_node(rng, *, batch, kv_heads, group, length, size, packed, rotary, causal, bias, scale=None):
    """(feeds, attributes) of a GroupQueryAttention node as the pack emits it; ``bias`` is
    None or the (B|1, N|1) leading dims of a bias with -inf entries (no row fully masked)."""
    heads = kv_heads * group
    attributes = {"num_heads": heads, "kv_num_heads": kv_heads, "causal": causal}
    if scale is not None:
        attributes["scale"] = scale

    def randn(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    if packed:
        feeds = {"query": randn(batch, length, (heads + 2 * kv_heads) * size)}
    else:
        feeds = {"query": randn(batch, length, heads * size), "key": randn(batch, length, kv_heads * size),
                 "value": randn(batch, length, kv_heads * size)}  # fmt: skip
    feeds["seqlens_k"] = np.full((batch,), length - 1, dtype=np.int32)
    feeds["total_sequence_length"] = np.array(length, dtype=np.int32)
    if rotary:
        attributes["do_rotary"] = 1
        angles = rng.uniform(0, 6, (length + 2, size // 2)).astype(np.float32)
        feeds["cos_cache"], feeds["sin_cache"] = np.cos(angles), np.sin(angles)
    if bias is not None:
        shape = (*bias, length, length)
        values = randn(*shape)
        values[..., 1:] = np.where(rng.random((*shape[:3], length - 1)) > 0.7, -np.inf, values[..., 1:])
        feeds["attention_bias"] = values  # column 0 stays finite
    return feeds, attributes


def gqa_cache_node(rng, *, batch, kv_heads, group, length, past, size, packed, rotary, bias, scale=None):
    """(feeds, attributes) of a GroupQueryAttention node with a cache, as the pack's
    gqa_kv_cache rule emits it: ``causal=1``, ``query_seqlens = S``, rotary at per-row
    ``position_ids`` into a table with at least P + S rows; ``bias`` as in gqa_node."""
    feeds, attributes = gqa_node(
        rng, batch=batch, kv_heads=kv_heads, group=group, length=length, size=size, packed=packed,
        rotary=False, causal=1, bias=None, scale=scale,
    )  # fmt: skip
    total = past + length
    feeds["past_key"] = rng.standard_normal((batch, kv_heads, past, size)).astype(np.float32)
    feeds["past_value"] = rng.standard_normal((batch, kv_heads, past, size)).astype(np.float32)
    feeds["seqlens_k"] = np.full((batch,), total - 1, dtype=np.int32)
    feeds["total_sequence_length"] = np.array(total, dtype=np.int32)
    if rotary:
        attributes["do_rotary"] = 1
        rows = batch * length + total
        angles = rng.uniform(0, 6, (rows, size // 2)).astype(np.float32)
        feeds["cos_cache"], feeds["sin_cache"] = np.cos(angles), np.sin(angles)
        feeds["position_ids"] = rng.integers(0, rows, (batch, length), dtype=np.int64)
    if bias is not None:
        shape = (*bias, length, total)
        values = rng.standard_normal(shape).astype(np.float32)
        values[..., 1:] = np.where(rng.random((*shape[:3], total - 1)) > 0.7, -np.inf, values[..., 1:])
        feeds["attention_bias"] = values  # column 0 stays finite
    feeds["query_seqlens"] = np.full((batch,), length, dtype=np.int32)
    return feeds, attributes


@st.composite
def gqa_cache_nodes(draw):
    """New tokens after a cache of 0 or more: separate or packed query/key/value, grouped
    heads, a (B|1, N|1, S, P + S) bias, a scale, rotary at position_ids."""
    batch, kv_heads, group = draw(st.integers(1, 3)), draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2, 3]))
    size = draw(st.sampled_from([8, 16, 32]))
    bias = (draw(st.sampled_from([1, batch])), draw(st.sampled_from([1, kv_heads * group])))
    return gqa_cache_node(
        np.random.default_rng(draw(st.integers(0, 2**16))),
        batch=batch, kv_heads=kv_heads, group=group, length=draw(st.integers(1, 5)), past=draw(st.sampled_from([0, 1, 7])),
        size=size, packed=draw(st.booleans()), rotary=size % 16 == 0 and draw(st.booleans()),
        bias=draw(st.sampled_from([None, bias])), scale=draw(st.sampled_from([None, 0.3])),
    )  # fmt: skip


@NEEDS_QUERY_SEQLENS
@given(gqa_cache_nodes())
def test_group_query_attention_node_with_cache(call):
    feeds, attributes = call
    model = _model("GroupQueryAttention", feeds, 3, **attributes)
    _same(model, list(feeds.values()))


@NEEDS_QUERY_SEQLENS
@pytest.mark.parametrize("past", [0, 1, 6])
@pytest.mark.parametrize("length", [1, 3])
@pytest.mark.parametrize("packed, rotary", [(False, False), (True, True)])
def test_group_query_attention_with_cache_combinations(past, length, packed, rotary):
    """Decode (one token), several new tokens after a cache (batch 2: onnxruntime needs
    query_seqlens there), an empty cache."""
    feeds, attributes = gqa_cache_node(
        np.random.default_rng(0), batch=2, kv_heads=2, group=2, length=length, past=past, size=16,
        packed=packed, rotary=rotary, bias=(2, 1), scale=0.3,
    )  # fmt: skip
    out, present_key, present_value = _same(_model("GroupQueryAttention", feeds, 3, **attributes), list(feeds.values()))
    assert present_key.shape == (2, 2, past + length, 16)
    np.testing.assert_array_equal(present_value[:, :, :past], feeds["past_value"])


@st.composite
def gqa_nodes(draw):
    """Separate or packed query/key/value, grouped heads, causal or not, a (B|1, N|1, S, S)
    bias, a scale, rotary inside the op (head size a multiple of 16, as onnxruntime wants)."""
    batch, kv_heads, group = draw(st.integers(1, 3)), draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2, 3]))
    size = draw(st.sampled_from([8, 16, 32]))
    bias = (draw(st.sampled_from([1, batch])), draw(st.sampled_from([1, kv_heads * group])))
    return gqa_node(
        np.random.default_rng(draw(st.integers(0, 2**16))),
        batch=batch, kv_heads=kv_heads, group=group, length=draw(st.integers(1, 9)), size=size,
        packed=draw(st.booleans()), rotary=size % 16 == 0 and draw(st.booleans()),
        causal=draw(st.sampled_from([0, 1])), bias=draw(st.sampled_from([None, bias])),
        scale=draw(st.sampled_from([None, 0.3, 1.2])),
    )  # fmt: skip


@given(gqa_nodes())
def test_group_query_attention_node(call):
    feeds, attributes = call
    model = _model("GroupQueryAttention", feeds, 3, **attributes)
    _same(model, list(feeds.values()))


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("rotary", [False, True])
@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("bias", [None, (2, 1), (1, 4)])
def test_group_query_attention_combinations(packed, rotary, causal, bias):
    """Every combination of the pack's inputs and flags, whatever hypothesis draws."""
    rng = np.random.default_rng(0)
    feeds, attributes = gqa_node(
        rng, batch=2, kv_heads=2, group=2, length=5, size=16, packed=packed, rotary=rotary,
        causal=causal, bias=bias, scale=0.3,
    )  # fmt: skip
    _same(_model("GroupQueryAttention", feeds, 3, **attributes), list(feeds.values()))


def test_row_with_every_key_masked_is_nan_as_in_onnxruntime():
    """The converter zeroes such rows before the op; the op itself gives NaN."""
    bias = np.zeros((1, 1, 4, 4), np.float32)
    bias[..., 2, :] = -np.inf
    feeds = _gqa_feeds(attention_bias=bias)
    (out, *_) = _same(_model("GroupQueryAttention", feeds, 3, num_heads=2, kv_num_heads=2, causal=0), list(feeds.values()))
    assert np.isnan(out[0, 2]).all() and not np.isnan(out[0, [0, 1, 3]]).any()


@st.composite
def rotary_nodes(draw):
    """(feeds, attributes): 3-D (B, S, N*H) input with num_heads or 4-D (B, N, S, H), per-row
    positions into (max_pos, H/2) caches, float32 or float16."""
    batch, heads, length = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 7))
    size, dtype = draw(st.sampled_from([2, 8, 16])), draw(st.sampled_from([np.float32, np.float16]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    rows = length + draw(st.integers(0, 5))  # onnxruntime wants a row per position at least
    angles = rng.uniform(0, 6, (rows, size // 2))
    positions = rng.integers(0, rows, (batch, length), dtype=np.int64)
    if draw(st.booleans()):
        x, attributes = rng.standard_normal((batch, length, heads * size)), {"num_heads": heads}
    else:
        x, attributes = rng.standard_normal((batch, heads, length, size)), {}
    feeds = {"input": x.astype(dtype), "position_ids": positions,
             "cos_cache": np.cos(angles).astype(dtype), "sin_cache": np.sin(angles).astype(dtype)}  # fmt: skip
    return feeds, attributes


@given(rotary_nodes())
def test_rotary_embedding_node(call):
    feeds, attributes = call
    model = _model("RotaryEmbedding", feeds, 1, **attributes)
    atol = 1e-4 if feeds["input"].dtype == np.float32 else 1e-3
    _same(model, list(feeds.values()), atol=atol)


def _gqa_feeds(length=4, kv_length=4, dtype=np.float32, **extra):
    rng = np.random.default_rng(0)
    feeds = {"query": rng.standard_normal((1, length, 16)).astype(dtype),
             "key": rng.standard_normal((1, kv_length, 16)).astype(dtype),
             "value": rng.standard_normal((1, kv_length, 16)).astype(dtype),
             "seqlens_k": np.array([kv_length - 1], dtype=np.int32),
             "total_sequence_length": np.array(kv_length, dtype=np.int32)}  # fmt: skip
    return {**feeds, **extra}


def _rotary_feeds(x_shape=(1, 2, 3, 8), head=8, positions=None, dtype=np.float32):
    """A 4-D (B, N, S, H) or 3-D (B, S, N*H) input, positions 0, 4 cache rows."""
    angles = np.linspace(0, 3, 4 * (head // 2)).reshape(4, -1)
    length = x_shape[1] if len(x_shape) == 3 else x_shape[2]
    positions = np.zeros((x_shape[0], length), dtype=np.int64) if positions is None else positions
    return {"input": np.ones(x_shape, dtype), "position_ids": positions,
            "cos_cache": np.cos(angles).astype(dtype), "sin_cache": np.sin(angles).astype(dtype)}  # fmt: skip


_CACHE = np.zeros((1, 1, 2, 16), np.float32)
UNSUPPORTED = [
    ("GroupQueryAttention", _gqa_feeds(), {"local_window_size": 2}, "local_window_size=2"),
    ("GroupQueryAttention", _gqa_feeds(), {"softcap": 1.0}, "softcap=1.0"),
    ("GroupQueryAttention", _gqa_feeds(), {"qk_output": 1}, "qk_output=1"),
    ("GroupQueryAttention", _gqa_feeds(), {"smooth_softmax": 1}, "smooth_softmax=1"),
    ("GroupQueryAttention", _gqa_feeds(), {"rotary_interleaved": 1}, "rotary_interleaved=1"),
    ("GroupQueryAttention", _gqa_feeds(past_key=_CACHE, past_value=_CACHE), {}, "a cache without causal=1 and query_seqlens"),
    ("GroupQueryAttention", _gqa_feeds(position_ids=np.zeros((1, 4), np.int64)), {}, "position_ids without past_key"),
    ("GroupQueryAttention", _gqa_feeds(past_key=_CACHE, past_value=_CACHE, query_seqlens=np.array([4], np.int32)),
     {"causal": 1}, "total_sequence_length=4 with a cache of 2"),
    ("GroupQueryAttention", _gqa_feeds(head_sink=np.zeros(2, np.float32)), {}, "input head_sink"),
    ("GroupQueryAttention", _gqa_feeds(seqlens_k=np.array([1], np.int32)), {}, "seqlens_k"),
    ("GroupQueryAttention", _gqa_feeds(kv_length=6), {}, "key length 6"),
    ("GroupQueryAttention", _gqa_feeds(dtype=np.float16), {}, "float16"),
    ("RotaryEmbedding", _rotary_feeds(), {"interleaved": 1}, "interleaved=1"),
    ("RotaryEmbedding", _rotary_feeds(), {"rotary_embedding_dim": 4}, "rotary_embedding_dim=4"),
    ("RotaryEmbedding", _rotary_feeds(), {"is_packed_batching": 1}, "is_packed_batching=1"),
    ("RotaryEmbedding", _rotary_feeds(), {"scale": 2.0}, "scale=2.0"),
    ("RotaryEmbedding", _rotary_feeds(positions=np.array([1], np.int64)), {}, "position_ids of rank 1"),
    ("RotaryEmbedding", _rotary_feeds(x_shape=(1, 3, 16)), {}, "without num_heads"),
    ("RotaryEmbedding", _rotary_feeds(dtype=np.float64), {}, "float64"),
]


@pytest.mark.parametrize("op, feeds, attributes, named", UNSUPPORTED, ids=[c[3] for c in UNSUPPORTED])
def test_what_the_pack_does_not_emit_raises(op, feeds, attributes, named):
    if op == "GroupQueryAttention":
        attributes = {"num_heads": 2, "kv_num_heads": 2, **attributes}
    model = _model(op, feeds, 3 if op == "GroupQueryAttention" else 1, **attributes)
    with pytest.raises(NotImplementedError, match=named.replace("(", r"\(")):
        ExtendedReferenceEvaluator(model).run(None, feeds)


def test_features_set_off_explicitly_are_accepted():
    """The attributes the pack never sets, written at their default (feature off)."""
    feeds = _gqa_feeds()
    off = {"local_window_size": -1, "softcap": 0.0, "qk_output": 0, "rotary_interleaved": 0, "smooth_softmax": 0,
           "sliding_window_cache": 0, "k_quant_type": "NONE", "v_quant_type": "NONE"}  # fmt: skip
    _same(_model("GroupQueryAttention", feeds, 3, num_heads=2, kv_num_heads=2, **off), list(feeds.values()))
    feeds = _rotary_feeds(x_shape=(1, 3, 16))
    off = {"num_heads": 2, "interleaved": 0, "rotary_embedding_dim": 0, "is_packed_batching": 0, "scale": 1.0}
    _same(_model("RotaryEmbedding", feeds, 1, **off), list(feeds.values()))


def test_kernels_come_from_the_pack_spec():
    assert sorted(k.__name__ for k in reference_kernels(["ortcontrib"])) == ["GroupQueryAttention", "MoE", "RotaryEmbedding"]


# -- graphs the pack exports: reference == onnxruntime == torch ------------------------------


def _exported_same(model, args, **to_onnx_kwargs):
    """Exports with the pack, checks the reference run against onnxruntime and torch."""
    onx = tonnx.to_onnx(model, args, **to_onnx_kwargs)
    feeds = [a for a in args if a is not None]
    (got,) = _same(onx, feeds)
    with torch.no_grad():
        np.testing.assert_allclose(got, model(*args).numpy(), atol=1e-4, rtol=1e-4)
    return {n.op_type for n in onx.graph.node if n.domain == MS}


@given(calls())
def test_exported_sdpa(call):
    """Separate query/key/value, causal flag or bias (bool and float masks, dead rows)."""
    module, inputs = call
    _exported_same(module, inputs)


@given(
    heads_kv=st.sampled_from([(4, 2), (4, 1), (2, 2)]),
    head_dim=st.sampled_from([8, 16]),
    batch=st.integers(1, 2),
    seq=st.integers(2, 7),
)
def test_exported_attention_block(heads_kv, head_dim, batch, seq):
    """A Llama block: RotaryEmbedding on 3-D projections (head size 8) or one packed
    projection with rotary inside GroupQueryAttention (head size 16)."""
    torch.manual_seed(0)
    model = Block(*heads_kv, head_dim).eval()
    ops = _exported_same(model, (torch.randn(batch, seq, heads_kv[0] * head_dim),))
    assert ops == ({"GroupQueryAttention"} if head_dim % 16 == 0 else {"GroupQueryAttention", "RotaryEmbedding"})


def test_exported_per_row_positions_and_dynamic_shapes():
    """Per-row positions: RotaryEmbedding reads rows b * S + s; symbolic batch and length
    (seqlens_k and total_sequence_length computed in the graph)."""
    torch.manual_seed(0)
    model = Block(4, 2).eval()
    x, positions = torch.randn(2, 6, 32), torch.tensor([[0, 1, 2, 3, 4, 5], [0, 0, 0, 1, 2, 3]])
    dims = {0: "batch", 1: "seq"}
    onx = tonnx.to_onnx(model, (x, positions), dynamic_shapes=(dims, dims))
    for args in ((x, positions), (torch.randn(3, 4, 32), torch.randint(0, 9, (3, 4)))):
        (got,) = _same(onx, list(args))
        np.testing.assert_allclose(got, model(*args).detach().numpy(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_exported_transformers(name):
    """Small HF models (left padding in one row): Llama's repeat_kv and RotaryEmbedding,
    GPT2's split projection as the packed query; bias rows fully masked zeroed."""
    from tests.models import transformer_models

    model, args = getattr(transformer_models, name)(batch=2, seq=8)
    assert "GroupQueryAttention" in _exported_same(model, args)
