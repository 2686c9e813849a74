"""The pack's rewrite rules on HF-style code: rotary embeddings, repeat_kv, packed QKV."""

from __future__ import annotations

import hypothesis.strategies as st
import torch
from hypothesis import given
from torch import nn

from tonnx.testing import check_model


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep: int):
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class Rotary(nn.Module):
    """transformers' LlamaRotaryEmbedding: tables computed from the positions at run time."""

    def __init__(self, dim: int, scaling: float = 1.0, second_half: float = 1.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim), persistent=False)
        self.scaling, self.second_half = scaling, second_half

    def forward(self, position_ids):
        inv = self.inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        second = freqs if self.second_half == 1.0 else freqs * self.second_half
        emb = torch.cat((freqs, second), dim=-1)
        return (emb.cos() * self.scaling).unsqueeze(1), (emb.sin() * self.scaling).unsqueeze(1)


class HeadNorm(nn.Module):
    """transformers' Qwen3RMSNorm over one head (its q_norm / k_norm)."""

    def __init__(self, size: int):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(size) + 0.5)

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + 1e-6))


class Block(nn.Module):
    """A Llama attention block (projections, rotary, repeat_kv, causal sdpa, output); with
    ``qk_norm`` Qwen3's: each head of the query and key normalized before the rotation."""

    def __init__(self, heads=4, kv_heads=2, head_dim=8, second_half=1.0, positions_input=False, qk_norm=False):
        super().__init__()
        hidden = heads * head_dim
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q = nn.Linear(hidden, heads * head_dim, bias=False)
        self.k = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o = nn.Linear(heads * head_dim, hidden, bias=False)
        self.rotary = Rotary(head_dim, scaling=0.9, second_half=second_half)
        self.positions_input = positions_input
        self.q_norm, self.k_norm = (HeadNorm(head_dim), HeadNorm(head_dim)) if qk_norm else (nn.Identity(), nn.Identity())

    def forward(self, x, position_ids=None):
        b, s, _ = x.shape
        if position_ids is None:
            position_ids = torch.arange(s).unsqueeze(0)
        q = self.q_norm(self.q(x).view(b, s, -1, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k(x).view(b, s, -1, self.head_dim)).transpose(1, 2)
        v = self.v(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(position_ids)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        out = torch.nn.functional.scaled_dot_product_attention(q, repeat_kv(k, rep), repeat_kv(v, rep), is_causal=True)
        return self.o(out.transpose(1, 2).reshape(b, s, -1))


def _ops(onx) -> list[str]:
    return [n.op_type for n in onx.graph.node]


def _attributes(node) -> dict:
    return {a.name: a.i for a in node.attribute if a.type == a.INT}


def _rewrites(onx) -> str:
    return {p.key: p.value for p in onx.metadata_props}.get("pkg.tonnx.rewrites", "")


@given(
    heads_kv=st.sampled_from([(4, 2), (4, 1), (2, 2), (6, 3)]),
    head_dim=st.sampled_from([8, 16]),
    batch=st.integers(1, 3),
    seq=st.integers(2, 9),
)
def test_attention_block_fuses(heads_kv, head_dim, batch, seq):
    """repeat_kv and the layout pairs fold into GroupQueryAttention; with a head size
    multiple of 16 (onnxruntime's rotary-in-the-op needs it) the three projections become
    one MatMul and the rotary embedding is done by the op, else by RotaryEmbedding."""
    heads, kv_heads = heads_kv
    torch.manual_seed(0)
    model = Block(heads, kv_heads, head_dim).eval()
    onx = check_model(model, (torch.randn(batch, seq, heads * head_dim),))
    packed = head_dim % 16 == 0
    projections = [n for n in onx.graph.node if n.op_type == "MatMul" and n.input[0] == "x"]
    assert len(projections) == (1 if packed else 3)
    (gqa,) = [n for n in onx.graph.node if n.op_type == "GroupQueryAttention"]
    attributes = _attributes(gqa)
    assert attributes["kv_num_heads"] == kv_heads and attributes["causal"] == 1
    assert attributes.get("do_rotary", 0) == int(packed)
    assert _ops(onx).count("RotaryEmbedding") == (0 if packed else 2)
    assert not {"Expand", "Softmax"} & set(_ops(onx))  # (a Transpose computes the tables)
    rules = ["gqa_repeat_kv", "rotary_embedding", "transpose_transpose", "reshape_reshape"]
    for rule in rules + (["gqa_packed_qkv"] if packed else []):
        assert f"ortcontrib:{rule}" in _rewrites(onx)


@given(
    heads_kv=st.sampled_from([(4, 2), (4, 1), (2, 2)]),
    head_dim=st.sampled_from([8, 16, 32]),
    batch=st.integers(1, 3),
    seq=st.integers(2, 9),
)
def test_attention_block_with_head_norm_fuses(heads_kv, head_dim, batch, seq):
    """Qwen3's per-head q/k norm between the projections and the rotation: with a head size
    multiple of 16 one MatMul and a Split feed the norms, the rotation is the op's
    (``do_rotary=1``, no RotaryEmbedding, no Transpose around it); else RotaryEmbedding as
    before."""
    heads, kv_heads = heads_kv
    torch.manual_seed(0)
    model = Block(heads, kv_heads, head_dim, qk_norm=True).eval()
    onx = check_model(model, (torch.randn(batch, seq, heads * head_dim),))
    packed = head_dim % 16 == 0
    projections = [n for n in onx.graph.node if n.op_type == "MatMul" and n.input[0] == "x"]
    assert len(projections) == (1 if packed else 3)
    (gqa,) = [n for n in onx.graph.node if n.op_type == "GroupQueryAttention"]
    assert _attributes(gqa).get("do_rotary", 0) == int(packed) and _attributes(gqa)["kv_num_heads"] == kv_heads
    assert _ops(onx).count("RotaryEmbedding") == (0 if packed else 2)
    assert ("ortcontrib:gqa_packed_qkv_norm" in _rewrites(onx)) == packed
    if packed:  # (one Transpose computes the tables)
        assert _ops(onx).count("Transpose") == 1 and _ops(onx).count("ReduceMean") == 2


def test_per_batch_positions_keep_rotary_embedding():
    """Positions given per row (as with left padding): RotaryEmbedding reads row b*S + s of
    the flattened tables; the projections stay apart (the fused op's rotary counts from 0)."""
    torch.manual_seed(0)
    model = Block(4, 2).eval()
    x = torch.randn(2, 6, 32)
    positions = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 0, 0, 1, 2, 3]])
    onx = check_model(model, (x, positions))
    assert _ops(onx).count("RotaryEmbedding") == 2
    (gqa,) = [n for n in onx.graph.node if n.op_type == "GroupQueryAttention"]
    assert _attributes(gqa).get("do_rotary", 0) == 0 and _attributes(gqa)["kv_num_heads"] == 2


def test_dynamic_shapes():
    torch.manual_seed(0)
    model = Block(4, 2).eval()
    x, positions = torch.randn(2, 6, 32), torch.arange(6).repeat(2, 1)
    onx = check_model(
        model,
        (x, positions),
        dynamic_shapes=({0: "batch", 1: "seq"}, {0: "batch", 1: "seq"}),
        other_inputs=[(torch.randn(3, 4, 32), torch.randint(0, 9, (3, 4)))],
    )
    assert _ops(onx).count("RotaryEmbedding") == 2 and _ops(onx).count("GroupQueryAttention") == 1


def test_tables_with_different_halves_are_left_alone():
    """The op uses the first half of each table: a table whose halves differ is no rotary."""
    torch.manual_seed(0)
    model = Block(4, 2, second_half=2.0).eval()
    onx = check_model(model, (torch.randn(2, 5, 32),))
    assert "RotaryEmbedding" not in _ops(onx) and "ortcontrib:rotary_embedding" not in _rewrites(onx)
    assert "GroupQueryAttention" in _ops(onx)
