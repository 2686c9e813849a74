"""``transformers::grouped_mm_fallback`` against its own eager kernel, in onnxruntime.

Drawn: experts (some receiving no token), top-k, tokens, sizes, dtypes, rows past
``offs[-1]`` (left zero by the op), and a second input with another token count and
another routing through the same exported graph (the token count is dynamic).
"""

from __future__ import annotations

import torch
import transformers.integrations.moe  # noqa: F401  (registers torch.ops.transformers)
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import check_op

KEY = "transformers::grouped_mm_fallback.default"
COVERS = {"transformers::grouped_mm_fallback.default"}
TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-3}


def _grouped_mm(input, weight, offs):
    return torch.ops.transformers.grouped_mm_fallback(input, weight, offs)


def _routed(gen, tokens, top_k, n_experts, n_used, tail, k, dtype):
    """Rows sorted by expert as transformers builds them: only ``n_used`` experts get tokens."""
    used = torch.randperm(n_experts, generator=gen)[:n_used]
    ids = used[torch.randint(0, n_used, (tokens * top_k,), generator=gen)].sort().values
    offs = torch.cumsum(torch.bincount(ids, minlength=n_experts), 0, dtype=torch.int32)
    rows = tokens * top_k + tail
    return torch.randn(rows, k, generator=gen).to(dtype), offs


@given(
    n_experts=st.integers(1, 6),
    top_k=st.integers(1, 3),
    tokens=st.lists(st.integers(1, 9), min_size=2, max_size=2),
    tails=st.lists(st.integers(0, 3), min_size=2, max_size=2),
    k=st.integers(1, 8),
    n=st.integers(1, 8),
    dtype=st.sampled_from([torch.float32, torch.float16]),
    data=st.data(),
)
def test_grouped_mm_fallback(n_experts, top_k, tokens, tails, k, n, dtype, data):
    gen = torch.Generator().manual_seed(data.draw(st.integers(0, 2**16)))
    weight = torch.randn(n_experts, k, n, generator=gen).to(dtype)
    feeds = []
    for t, tail in zip(tokens, tails):
        if t * top_k + tail < 2:  # torch.export specializes a dimension of size 0 or 1
            tail = 2
        n_used = data.draw(st.integers(1, n_experts))
        x, offs = _routed(gen, t, top_k, n_experts, n_used, tail, k, dtype)
        feeds.append((x, weight, offs))
    tol = TOLERANCE[dtype]
    check_op(
        _grouped_mm,
        feeds[0],
        expect_op=KEY,
        other_inputs=feeds[1:],
        dynamic_shapes={"tensors": ({0: torch.export.Dim("S")}, None, None)},
        atol=tol,
        rtol=tol,
    )


def test_rows_past_the_last_offset_are_zero_and_empty_experts_skipped():
    weight = torch.arange(24, dtype=torch.float32).reshape(3, 2, 4)
    x = torch.ones(7, 2)
    offs = torch.tensor([2, 2, 5], dtype=torch.int64)  # expert 1 gets nothing, rows 5, 6 none
    onx = check_op(_grouped_mm, (x, weight, offs), expect_op=KEY, atol=0, rtol=0)
    expected = _grouped_mm(x, weight, offs)
    assert expected[5:].abs().sum() == 0 and (expected[2:5] == weight[2].sum(0)).all()
    ops = {node.op_type for node in onx.graph.node}
    assert {"GatherElements", "LessOrEqual", "Where"} <= ops
