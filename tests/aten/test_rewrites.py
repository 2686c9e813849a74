"""The aten pack's rewrite rules: HF's RMSNorm and rotary embeddings as the standard ops
RMSNormalization and RotaryEmbedding (opset 23), checked against torch eager in
onnxruntime; every case that is not exactly the op keeps its primitive graph."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import given
from torch import nn

import tonnx
from tonnx.testing import check_model

#: the standard graph, whatever contrib pack is installed
STANDARD = {"dispatcher": tonnx.Dispatcher(packs=["no:ortcontrib"])}
TOL = {"atol": 1e-5, "rtol": 1e-5}


def _ops(onx) -> list[str]:
    return [n.op_type for n in onx.graph.node]


def _rewrites(onx) -> str:
    return {p.key: p.value for p in onx.metadata_props}.get("pkg.tonnx.rewrites", "")


# -- RMSNorm ------------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    """transformers' LlamaRMSNorm; ``offset=1`` is Gemma's ``x * (1 + w)`` in float32."""

    def __init__(self, dim: int, eps: float, offset: float = 0.0, dims: int = 1):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim) * 0.5 + 1)
        self.eps, self.offset, self.dims = eps, offset, tuple(range(-dims, 0))

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(self.dims, keepdim=True) + self.eps)
        if self.offset:
            return x * (self.offset + self.weight.float())
        return self.weight * x.to(dtype)


class QKNorm(nn.Module):
    """Qwen3's query norm: over the head size of (B, S, N, H) heads, then transposed."""

    def __init__(self, heads: int, head_dim: int, eps: float):
        super().__init__()
        self.norm, self.heads, self.head_dim = RMSNorm(head_dim, eps), heads, head_dim

    def forward(self, x):
        b, s, _ = x.shape
        return self.norm(x.view(b, s, self.heads, self.head_dim)).transpose(1, 2)


@given(
    eps=st.sampled_from([1e-6, 1e-5, 1e-3, 0.25]),
    offset=st.sampled_from([0.0, 1.0]),
    shape=st.sampled_from([(2, 5, 16), (1, 3, 64), (7, 8)]),
    seed=st.integers(0, 2**16),
)
def test_rms_norm_becomes_rms_normalization(eps, offset, shape, seed):
    torch.manual_seed(seed)
    model = RMSNorm(shape[-1], eps, offset).eval()
    onx = check_model(model, (torch.randn(*shape) * 3,), target_opset=23, **STANDARD, **TOL)
    assert _ops(onx) == ["RMSNormalization"] or (offset and "RMSNormalization" in _ops(onx))
    assert {"Pow", "ReduceMean", "Sqrt", "Div"}.isdisjoint(_ops(onx))
    (node,) = [n for n in onx.graph.node if n.op_type == "RMSNormalization"]
    attributes = {a.name: a for a in node.attribute}
    assert attributes["axis"].i == -1 and attributes["epsilon"].f == pytest.approx(eps)
    assert "aten:rms_normalization" in _rewrites(onx)


def test_rms_norm_over_two_axes_and_dynamic_shapes():
    torch.manual_seed(0)
    model = RMSNorm(8, 1e-6, dims=2).eval()
    model.weight = nn.Parameter(torch.randn(4, 8))
    onx = check_model(
        model, (torch.randn(2, 3, 4, 8),), target_opset=23, **STANDARD, **TOL,
        dynamic_shapes=({0: "batch", 1: "seq"},), other_inputs=[(torch.randn(3, 5, 4, 8),)],
    )
    (node,) = [n for n in onx.graph.node if n.op_type == "RMSNormalization"]
    assert {a.name: a.i for a in node.attribute}["axis"] == -2


def test_qwen3_head_norm():
    torch.manual_seed(0)
    onx = check_model(QKNorm(4, 16, 1e-6).eval(), (torch.randn(2, 5, 64),), target_opset=23, **STANDARD, **TOL)
    assert _ops(onx).count("RMSNormalization") == 1


@pytest.mark.parametrize("opset", [18, 22])
def test_rms_norm_before_opset_23_stays_primitive(opset):
    onx = check_model(RMSNorm(16, 1e-6).eval(), (torch.randn(2, 16),), target_opset=opset, **STANDARD, **TOL)
    assert "RMSNormalization" not in _ops(onx) and "Sqrt" in _ops(onx)


class NotQuiteRMSNorm(nn.Module):
    """Chains close to the op but not it: each must keep its primitive ops."""

    def __init__(self, case: str):
        super().__init__()
        self.case = case
        self.weight = nn.Parameter(torch.randn(3, 16) if case == "wide_weight" else torch.randn(16))

    def forward(self, x):
        axis = 1 if self.case == "leading_axis" else -1
        other = x * 2 if self.case == "other_x" else x
        normed = other * torch.rsqrt(x.pow(2).mean(axis, keepdim=True) + 1e-6)
        if self.case == "float16":
            normed = normed.half()
            return self.weight.half() * normed
        if self.case == "normed_read_twice":
            return self.weight * normed + normed
        return self.weight * normed


@pytest.mark.parametrize("case", ["wide_weight", "leading_axis", "other_x", "normed_read_twice", "float16"])
def test_chains_that_are_not_rms_normalization(case):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 16)
    onx = check_model(NotQuiteRMSNorm(case).eval(), (x,), target_opset=23, **STANDARD, atol=1e-3, rtol=1e-3)
    assert "RMSNormalization" not in _ops(onx)


# -- rotary embeddings ----------------------------------------------------------------------------


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_every_two(x):
    """GPT-J's interleaved rotation."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


class Rope(nn.Module):
    """q and k through transformers' rotary embedding (Llama's; Phi's partial one with
    ``rotary < head_dim``; GPT-J's interleaved one), tables computed from the positions."""

    def __init__(self, heads=4, head_dim=16, rotary=None, scaling=1.0, second_half=1.0, interleaved=False):
        super().__init__()
        self.heads, self.head_dim, self.rotary = heads, head_dim, rotary or head_dim
        dim = self.rotary
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim), persistent=False)
        self.scaling, self.second_half, self.interleaved = scaling, second_half, interleaved

    def tables(self, position_ids):
        inv = self.inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        if self.interleaved:
            emb = freqs.repeat_interleave(2, dim=-1)
        else:
            emb = torch.cat((freqs, freqs * self.second_half if self.second_half != 1.0 else freqs), dim=-1)
        return (emb.cos() * self.scaling).unsqueeze(1), (emb.sin() * self.scaling).unsqueeze(1)

    def forward(self, q, k, position_ids=None):
        b, s, _ = q.shape
        if position_ids is None:
            position_ids = torch.arange(s).unsqueeze(0)
        q = q.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        cos, sin = self.tables(position_ids)
        rotate = rotate_every_two if self.interleaved else rotate_half
        r = self.rotary
        out = []
        for x in (q, k):
            x_rot, x_pass = x[..., :r], x[..., r:]
            x_rot = x_rot * cos + rotate(x_rot) * sin
            out.append(torch.cat((x_rot, x_pass), dim=-1) if r < self.head_dim else x_rot)
        return tuple(out)


def _inputs(batch, seq, heads=4, head_dim=16, positions=True):
    q, k = torch.randn(batch, seq, heads * head_dim), torch.randn(batch, seq, heads * head_dim)
    if not positions:
        return (q, k)
    return (q, k, torch.randint(0, 50, (batch, seq)))


@given(
    batch=st.integers(1, 3),
    seq=st.integers(2, 9),
    head_dim=st.sampled_from([8, 16, 64]),
    scaling=st.sampled_from([1.0, 0.7]),
    positions=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_rotary_becomes_rotary_embedding(batch, seq, head_dim, scaling, positions, seed):
    """Tables per batch entry (position ids given) or one for the batch (expanded)."""
    torch.manual_seed(seed)
    model = Rope(head_dim=head_dim, scaling=scaling).eval()
    onx = check_model(model, _inputs(batch, seq, head_dim=head_dim, positions=positions),
                      target_opset=23, **STANDARD, **TOL)
    ops = _ops(onx)
    assert ops.count("RotaryEmbedding") == 2
    assert {"Neg", "Slice", "Concat"}.isdisjoint(ops) or not positions and "Concat" in ops  # Expand's shape
    assert "aten:rotary_embedding" in _rewrites(onx)


def test_rotary_dynamic_shapes():
    torch.manual_seed(0)
    for positions in (True, False):
        onx = check_model(
            Rope().eval(), _inputs(2, 6, positions=positions), target_opset=23, **STANDARD, **TOL,
            dynamic_shapes=({0: "batch", 1: "seq"},) * (3 if positions else 2),
            other_inputs=[_inputs(3, 4, positions=positions)],
        )
        assert _ops(onx).count("RotaryEmbedding") == 2


@pytest.mark.parametrize("rotary", [4, 8])
def test_partial_rotary_is_one_op(rotary):
    torch.manual_seed(0)
    onx = check_model(Rope(rotary=rotary).eval(), _inputs(2, 5), target_opset=23, **STANDARD, **TOL)
    nodes = [n for n in onx.graph.node if n.op_type == "RotaryEmbedding"]
    assert len(nodes) == 2 and "Concat" not in _ops(onx)
    assert all({a.name: a.i for a in n.attribute}["rotary_embedding_dim"] == rotary for n in nodes)


@pytest.mark.parametrize(
    "kwargs", [{"interleaved": True}, {"second_half": 2.0}], ids=["interleaved", "unequal_halves"]
)
def test_rotary_not_theirs_stays_primitive(kwargs):
    """GPT-J's interleaved form is not matched; tables whose halves differ are no rotary."""
    torch.manual_seed(0)
    onx = check_model(Rope(**kwargs).eval(), _inputs(2, 5), target_opset=23, **STANDARD, **TOL)
    assert "RotaryEmbedding" not in _ops(onx)


def test_rotary_before_opset_23_stays_primitive():
    onx = check_model(Rope().eval(), _inputs(2, 5), target_opset=22, **STANDARD, **TOL)
    assert "RotaryEmbedding" not in _ops(onx) and "Neg" in _ops(onx)


# -- the cache write: TensorScatter ---------------------------------------------------------------


class CacheWrite(nn.Module):
    """transformers' ``StaticLayer.update``: ``index_copy`` at ``arange(n) + start``."""

    def __init__(self, dim: int = 2, index: str = "arange"):
        super().__init__()
        self.dim, self.index = dim, index

    def forward(self, buffer, update, start):
        n = update.shape[self.dim]
        if self.index == "arange":
            positions = torch.arange(n) + start
        elif self.index == "reversed":
            positions = torch.arange(n - 1, -1, -1) + start
        else:  # every other slot
            positions = torch.arange(n) * 2 + start
        return buffer.index_copy(self.dim, positions, update)


def _cache_inputs(batch, length, n, start, dim=2):
    buffer, update = torch.randn(batch, 3, length, 4), torch.randn(batch, 3, n, 4)
    if dim == 1:
        buffer, update = torch.randn(batch, length, 3, 4), torch.randn(batch, n, 3, 4)
    return buffer, update, torch.tensor(start)


@given(batch=st.integers(1, 3), n=st.integers(1, 4), start=st.integers(0, 6), dim=st.sampled_from([1, 2]))
def test_cache_write_becomes_tensor_scatter(batch, n, start, dim):
    onx = check_model(CacheWrite(dim).eval(), _cache_inputs(batch, 10, n, start, dim), target_opset=24,
                      **STANDARD, atol=0, rtol=0)
    assert "TensorScatter" in _ops(onx) and "ScatterElements" not in _ops(onx)
    (node,) = [n for n in onx.graph.node if n.op_type == "TensorScatter"]
    assert {a.name: a.i for a in node.attribute}["axis"] == dim


def test_cache_write_dynamic_shapes():
    onx = check_model(
        CacheWrite().eval(), _cache_inputs(2, 10, 3, 4), target_opset=26, **STANDARD, atol=0, rtol=0,
        dynamic_shapes=({0: "batch", 2: "length"}, {0: "batch", 2: "n"}, None),
        other_inputs=[_cache_inputs(3, 12, 2, 9), _cache_inputs(1, 5, 5, 0)],
    )
    assert "TensorScatter" in _ops(onx)


@pytest.mark.parametrize(
    "model, opset",
    [(CacheWrite(), 23), (CacheWrite(index="reversed"), 24), (CacheWrite(index="strided"), 24), (CacheWrite(0), 24)],
    ids=["opset23", "reversed", "strided", "batch_axis"],
)
def test_writes_that_are_not_tensor_scatter(model, opset):
    """Before opset 24, an index that is not ``start + 0..n-1``, or the batch axis: ScatterElements."""
    args = _cache_inputs(2, 10, 2, 1)
    if model.dim == 0:
        args = (torch.randn(6, 3), torch.randn(2, 3), torch.tensor(1))
    onx = check_model(model.eval(), args, target_opset=opset, **STANDARD, atol=0, rtol=0)
    assert "TensorScatter" not in _ops(onx) and "ScatterElements" in _ops(onx)


# -- repeat_kv before Attention -------------------------------------------------------------------


def repeat_kv(x, n_rep: int):
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class GroupedAttention(nn.Module):
    """transformers' sdpa attention: repeat_kv, then scaled_dot_product_attention with a mask."""

    def __init__(self, heads: int, kv_heads: int):
        super().__init__()
        self.rep = heads // kv_heads

    def forward(self, q, k, v, mask):
        k, v = repeat_kv(k, self.rep), repeat_kv(v, self.rep)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@given(heads_kv=st.sampled_from([(4, 2), (4, 1), (6, 3), (8, 2)]), seq=st.integers(1, 5), past=st.integers(0, 4))
def test_repeat_kv_folds_into_attention(heads_kv, seq, past):
    heads, kv_heads = heads_kv
    total = seq + past
    q, k, v = torch.randn(2, heads, seq, 8), torch.randn(2, kv_heads, total, 8), torch.randn(2, kv_heads, total, 8)
    mask = torch.randn(2, 1, seq, total)
    onx = check_model(GroupedAttention(heads, kv_heads).eval(), (q, k, v, mask), target_opset=23, **STANDARD, **TOL)
    assert _ops(onx) == ["Attention"]
    assert "aten:attention_repeat_kv" in _rewrites(onx)


def test_repeat_kv_before_opset_23_stays():
    q, k, v = torch.randn(2, 4, 3, 8), torch.randn(2, 2, 3, 8), torch.randn(2, 2, 3, 8)
    onx = check_model(GroupedAttention(4, 2).eval(), (q, k, v, torch.randn(2, 1, 3, 3)), target_opset=22,
                      **STANDARD, **TOL)
    assert "Expand" in _ops(onx) and "Attention" not in _ops(onx)
