"""aten::scaled_dot_product_attention -> GroupQueryAttention, against torch eager."""

from __future__ import annotations

import hypothesis.strategies as st
import torch
from hypothesis import given

import tonnx
from tonnx.testing import check_model

KEY = "aten::scaled_dot_product_attention.default"
COVERS = {"aten::scaled_dot_product_attention.default"}


class Sdpa(torch.nn.Module):
    def __init__(self, is_causal=False, scale=None, enable_gqa=False):
        super().__init__()
        self.kwargs = dict(is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)

    def forward(self, q, k, v, mask=None):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.kwargs)


def _attention_nodes(onx):
    return [n for n in onx.graph.node if n.op_type == "GroupQueryAttention"]


@st.composite
def calls(draw):
    """(module, inputs): batch, (grouped) heads, L == S, head sizes, masks of every
    broadcastable shape, bool (rows fully masked included) or float (-inf included)."""
    batch, kv_heads = draw(st.integers(1, 3)), draw(st.sampled_from([1, 2]))
    group, length = draw(st.sampled_from([1, 2, 3])), draw(st.integers(1, 9))
    e, ev = draw(st.sampled_from([4, 8, 16])), draw(st.sampled_from([8, 16]))
    heads = kv_heads * group
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    q = torch.randn(batch, heads, length, e, generator=gen)
    k = torch.randn(batch, kv_heads, length, e, generator=gen)
    v = torch.randn(batch, kv_heads, length, ev, generator=gen)
    kind = draw(st.sampled_from(["none", "causal", "bool", "float"]))
    scale = draw(st.sampled_from([None, 0.3]))
    module = Sdpa(is_causal=kind == "causal", scale=scale, enable_gqa=group > 1 or draw(st.booleans()))
    if kind in ("none", "causal"):
        return module, (q, k, v)
    shape = draw(st.sampled_from([
        (length, length), (batch, 1, length, length), (1, 1, length, length),
        (batch, 1, 1, length), (batch, heads, length, length),
    ]))
    keep = torch.rand(*shape, generator=gen) > 0.3
    if draw(st.booleans()) and len(shape) == 4 and shape[2] > 1:
        keep[..., 0, :] = False  # a query row with every key masked: torch gives 0
    if kind == "bool":
        return module, (q, k, v, keep)
    bias = torch.randn(*shape, generator=gen).masked_fill(~keep, float("-inf"))
    return module, (q, k, v, bias)


@given(calls())
def test_sdpa(call):
    module, inputs = call
    onx = check_model(module, inputs, expect_ops=[KEY])
    e = inputs[0].shape[-1]
    fused = inputs[2].shape[-1] == e and e % 8 == 0  # else the op cannot: aten pack
    assert [n.domain for n in _attention_nodes(onx)] == (["com.microsoft"] if fused else [])


def test_sdpa_dynamic_shapes():
    """Batch and length as symbols: lengths and the causal mask are computed in the graph."""
    q, k, v = (torch.randn(2, 4, 6, 8) for _ in range(3))
    mask = torch.rand(2, 1, 6, 6) > 0.2
    dims = {0: "batch", 2: "seq"}
    for module, inputs, shapes in (
        (Sdpa(is_causal=True), (q, k, v), (dims, dims, dims)),
        (Sdpa(), (q, k, v, mask), (dims, dims, dims, {0: "batch", 2: "seq", 3: "seq"})),
    ):
        other = tuple(
            torch.randn(3, *x.shape[1:2], 5, x.shape[-1]) if x.dtype != torch.bool else torch.rand(3, 1, 5, 5) > 0.2
            for x in inputs
        )
        onx = check_model(module, inputs, dynamic_shapes=shapes, other_inputs=[other])
        assert len(_attention_nodes(onx)) == 1


def test_unsupported_calls_go_to_the_aten_pack():
    """Cross-attention (L != S), float64 and a zero scale are not the fused op's."""
    q, kv = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 5, 8)
    for module, inputs in (
        (Sdpa(), (q, kv, kv)),
        (Sdpa(), tuple(torch.randn(1, 2, 4, 8, dtype=torch.float64) for _ in range(3))),
        (Sdpa(scale=0.0), (q, q, q)),
    ):
        onx = check_model(module, inputs)
        assert not _attention_nodes(onx)
        assert "Softmax" in {n.op_type for n in onx.graph.node} or any(n.op_type == "Attention" for n in onx.graph.node)


def test_constant_causal_mask_becomes_the_causal_flag():
    """HF passes the causal mask as a constant when there is no padding: causal=1, no bias."""

    class ConstantMask(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.ones(1, 1, 7, 7, dtype=torch.bool).tril())

        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)

    onx = check_model(ConstantMask(), tuple(torch.randn(2, 2, 7, 8) for _ in range(3)))
    (node,) = _attention_nodes(onx)
    attributes = {a.name: a.i for a in node.attribute if a.type == a.INT}
    assert attributes["causal"] == 1 and len(node.input) < 11


def test_blocked_pack_gives_the_same_numbers():
    module, inputs = Sdpa(is_causal=True), tuple(torch.randn(2, 2, 5, 8) for _ in range(3))
    onx = check_model(module, inputs, dispatcher=tonnx.Dispatcher(packs=["no:ortcontrib"]))
    assert not _attention_nodes(onx)
