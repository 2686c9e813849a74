"""scaled_dot_product_attention against torch eager: decomposition (opset 18) and Attention (23)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, check_op

SDPA = "aten::scaled_dot_product_attention.default"
COVERS = {"aten::scaled_dot_product_attention.default"}

#: dtype -> (runtime, tolerance); bfloat16 runs in onnx's reference evaluator.
DTYPES = {
    torch.float32: ("onnxruntime", 1e-4),
    torch.float64: ("onnxruntime", 1e-6),
    torch.float16: ("onnxruntime", 1e-2),
    torch.bfloat16: ("reference", 5e-2),
}
#: How a mask of (B, Hq, L, S) scores is shaped: full, per batch, per head (3-D), 2-D,
#: padding-like, 1-D, broadcast on both last axes.
MASK_SHAPES = ("full", "batch", "heads", "2d", "padding", "1d", "columns")


def sdpa(*args, **kwargs):
    return F.scaled_dot_product_attention(*args, **kwargs)


def _mask_shape(kind: str, rank: int, b: int, h: int, length: int, size: int) -> tuple:
    if kind == "1d" and rank == 4:
        kind = "2d"  # torch.export fails on a 1-D mask with 4-D inputs (IndexError in its meta)
    lead = (b, h) if rank == 4 else (b,)
    return {
        "full": (*lead, length, size),
        "batch": (b, *([1] * (rank - 3)), length, size),
        "heads": (h, length, size) if rank == 4 else (length, size),
        "2d": (length, size),
        "columns": (1, length, 1),
        "padding": (b, *([1] * (rank - 2)), size),
        "1d": (size,),
    }[kind]


def _mask(draw, kind: str, shape: tuple, dtype) -> torch.Tensor:
    """A bool or float mask; some rows are fully masked (torch gives 0 there)."""
    keep = torch.rand(shape) > draw(st.sampled_from([0.2, 0.5]))
    if draw(st.booleans()) and len(shape) >= 2:
        keep[(0,) * (len(shape) - 2) + (0,)] = False
    if kind == "bool":
        return keep
    values = torch.randn(shape, dtype=dtype)
    return values.masked_fill(~keep, float("-inf"))


@st.composite
def attention_cases(draw):
    rank = draw(st.sampled_from([3, 4]))
    b, length, size = draw(st.integers(1, 3)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    e, ev = draw(st.sampled_from([4, 8])), draw(st.sampled_from([3, 4, 8]))
    hkv = draw(st.integers(1, 2)) if rank == 4 else 1
    groups = draw(st.integers(1, 3)) if rank == 4 else 1
    hq = hkv * groups
    dtype = draw(st.sampled_from(list(DTYPES)))
    lead_q, lead_kv = ((b, hq), (b, hkv)) if rank == 4 else ((b,), (b,))
    tensors = [
        torch.randn(*lead_q, length, e, dtype=dtype),
        torch.randn(*lead_kv, size, e, dtype=dtype),
        torch.randn(*lead_kv, size, ev, dtype=dtype),
    ]
    kwargs = {"enable_gqa": hq != hkv}
    mask_kind = draw(st.sampled_from(["none", "bool", "float"]))
    if mask_kind == "none":
        kwargs["is_causal"] = draw(st.booleans())
    else:
        shape = _mask_shape(draw(st.sampled_from(MASK_SHAPES)), rank, b, hq, length, size)
        tensors.append(_mask(draw, mask_kind, shape, dtype))
    scale = draw(st.sampled_from([None, None, 0.3, 1.7, -0.5]))
    if scale is not None:
        kwargs["scale"] = scale
    return tensors, kwargs, dtype


@pytest.mark.parametrize("opset", [18, 23])
@given(case=attention_cases())
def test_scaled_dot_product_attention(opset, case):
    tensors, kwargs, dtype = case
    runtime, tol = DTYPES[dtype]
    check_op(
        sdpa,
        tensors,
        kwargs=kwargs,
        expect_op=SDPA,
        target_opset=opset,
        runtime=runtime,
        atol=tol,
        rtol=tol,
    )


@given(
    opset=st.sampled_from([18, 23]),
    sizes=st.tuples(st.integers(2, 3), st.integers(2, 5), st.integers(2, 5)),  # 0/1 specialize
    other=st.tuples(st.integers(1, 4), st.integers(1, 7), st.integers(1, 7)),
    variant=st.sampled_from(["causal", "plain", "padding_mask", "gqa_causal"]),
)
def test_scaled_dot_product_attention_dynamic(opset, sizes, other, variant):
    """Batch, query and key lengths are dynamic; the model runs on other sizes too."""

    def inputs(b, length, size):
        hkv = 1 if variant == "gqa_causal" else 2
        q = torch.randn(b, 2, length, 8)
        kv = [torch.randn(b, hkv, size, 8), torch.randn(b, hkv, size, 4)]
        mask = [torch.rand(b, 1, 1, size) > 0.3] if variant == "padding_mask" else []
        return (q, *kv, *mask)

    kwargs = {
        "is_causal": variant in ("causal", "gqa_causal"),
        "enable_gqa": variant == "gqa_causal",
    }
    dims = [{0: "batch", 2: "qlen"}, {0: "batch", 2: "klen"}, {0: "batch", 2: "klen"}]
    if variant == "padding_mask":
        dims.append({0: "batch", 3: "klen"})
    check_op(
        sdpa,
        inputs(*sizes),
        kwargs=kwargs,
        expect_op=SDPA,
        target_opset=opset,
        dynamic_shapes={"tensors": tuple(dims)},
        other_inputs=[inputs(*other)],
    )


@pytest.mark.parametrize("opset", [18, 23])
def test_scaled_dot_product_attention_uses_attention_op_at_23(opset):
    q = torch.randn(2, 4, 5, 8)
    kv = torch.randn(2, 2, 6, 8)
    mask = torch.rand(2, 1, 5, 6) > 0.3
    onx = check_op(
        sdpa, [q, kv, kv, mask], kwargs={"enable_gqa": True}, expect_op=SDPA, target_opset=opset
    )
    ops = {n.op_type for n in onx.graph.node}
    assert ("Attention" in ops) == (opset >= 23), ops


def test_scaled_dot_product_attention_dropout_is_unsupported():
    q = torch.randn(1, 2, 3, 4)
    with pytest.raises(tonnx.UnsupportedError, match="dropout_p"):
        check_op(sdpa, [q, q, q], kwargs={"dropout_p": 0.5}, expect_op=SDPA)


class _SelfAttention(torch.nn.Module):
    """Transformers-style attention: projections, heads, GQA, bool mask, explicit scale.

    The projections see (tokens, hidden) matrices: a rank-3 linear gives several ONNX nodes
    whose names collide with the next FX node's (GraphBuilder._unique_node_name).
    """

    def __init__(self, hidden=16, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.dim = heads, kv_heads, hidden // heads
        self.q = torch.nn.Linear(hidden, heads * self.dim)
        self.k = torch.nn.Linear(hidden, kv_heads * self.dim)
        self.v = torch.nn.Linear(hidden, kv_heads * self.dim)
        self.o = torch.nn.Linear(heads * self.dim, hidden)

    def forward(self, x, mask):
        b, n, hidden = x.shape
        tokens = x.reshape(b * n, hidden)
        q = self.q(tokens).view(b, n, self.heads, self.dim).transpose(1, 2)
        k = self.k(tokens).view(b, n, self.kv_heads, self.dim).transpose(1, 2)
        v = self.v(tokens).view(b, n, self.kv_heads, self.dim).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=self.dim**-0.5, enable_gqa=True
        )
        return self.o(y.transpose(1, 2).reshape(b * n, -1)).view(b, n, hidden)


@given(b=st.integers(1, 3), n=st.integers(1, 6), opset=st.sampled_from([18, 23]))
def test_transformers_style_attention(b, n, opset):
    model = _SelfAttention().eval()
    mask = torch.ones(n, n, dtype=torch.bool).tril().expand(b, 1, n, n)
    check_model(model, (torch.randn(b, n, 16), mask), expect_ops=[SDPA], target_opset=opset)


@pytest.mark.parametrize("dead_row", [False, True])
def test_constant_mask_guard_only_when_a_row_is_fully_masked(dead_row):
    """A constant mask that leaves every row a score needs no safe-softmax guard."""
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    if dead_row:
        mask[2] = False

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", mask)

        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)

    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    # the aten pack's graph, whatever else is installed (ortcontrib emits GroupQueryAttention)
    standard = tonnx.Dispatcher(packs=["no:ortcontrib"])
    # the decomposition (below opset 23; from 23 the Attention op gives dead rows 0 itself)
    onx = check_model(
        Model(), (q, k, v), expect_ops=["aten::scaled_dot_product_attention.default"], dispatcher=standard,
        target_opset=20,
    )
    # the dead rows of a constant mask are found at export (the mask's bias is folded):
    # a Mul zeroes the dead rows' weights only when there are some
    ops = [n.op_type for n in onx.graph.node]
    softmax = next(n.output[0] for n in onx.graph.node if n.op_type == "Softmax")
    zeroing = [n for n in onx.graph.node if n.op_type == "Mul" and softmax in n.input]
    assert len(zeroing) == int(dead_row) and "ReduceMax" not in ops and "Where" not in ops
