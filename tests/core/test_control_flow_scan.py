"""``scan`` and ``map`` -> ONNX Scan, checked against torch eager in onnxruntime, on other
sequence lengths and sizes than the exported ones."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch._higher_order_ops import map as torch_map
from torch._higher_order_ops.scan import scan

import tonnx
from tonnx.testing import check_model


def scan_nodes(onx) -> list:
    return [n for n in onx.graph.node if n.op_type == "Scan"]


class Recurrence(torch.nn.Module):
    """Two carries, two scanned tensors, two stacked outputs, a weight read from outside."""

    def __init__(self, dim: int, reverse: bool):
        super().__init__()
        self.dim, self.reverse = dim, reverse
        self.w = torch.nn.Parameter(torch.randn(3, 3) * 0.5)

    def forward(self, h, total, xs, gates):
        def combine(carry, x):
            h, total = carry
            x, gate = x
            h = torch.tanh(h @ self.w + x) * torch.sigmoid(gate)
            total = total + h.sum()
            return (h, total), (h * 2.0, total.expand(2).clone())

        (h, total), (hs, totals) = scan(
            combine, (h, total), (xs, gates), dim=self.dim, reverse=self.reverse
        )
        return h, total, hs, totals


@given(
    dim=st.sampled_from([0, 1]),
    reverse=st.booleans(),
    batch=st.integers(2, 4),
    length=st.integers(2, 5),
    others=st.lists(st.tuples(st.integers(1, 5), st.integers(1, 7)), min_size=1, max_size=3),
)
def test_scan_carries_and_stacked_outputs(dim, reverse, batch, length, others):
    def inputs(b, t):
        seq = (t, b, 3) if dim == 0 else (b, t, 3)
        return torch.rand(b, 3), torch.rand(()), torch.randn(*seq), torch.randn(*seq)

    seq_dims = {0: "t", 1: "b"} if dim == 0 else {0: "b", 1: "t"}
    onx = check_model(
        Recurrence(dim, reverse), inputs(batch, length),
        dynamic_shapes=({0: "b"}, None, seq_dims, seq_dims),
        other_inputs=[inputs(b, t) for b, t in others],
    )
    assert len(scan_nodes(onx)) == 1


class CondInScan(torch.nn.Module):
    """A torch.cond in the combine function: each step picks its branch from the data."""

    def forward(self, init, xs):
        def combine(c, x):
            n = torch.cond(x.sum() > 0, lambda a, b: a + b, lambda a, b: a * b - 1.0, (c, x))
            return n, n.clone()

        return scan(combine, init, xs)


@given(length=st.integers(2, 6), others=st.lists(st.integers(1, 8), min_size=1, max_size=3))
def test_cond_inside_scan(length, others):
    check_model(
        CondInScan(), (torch.randn(4), torch.randn(length, 4)),
        dynamic_shapes=(None, {0: "t"}),
        other_inputs=[(torch.randn(4), torch.randn(t, 4)) for t in others],
    )


class Mapped(torch.nn.Module):
    """map over two tensors along dim 0, with two extra arguments, two outputs."""

    def forward(self, xs, ys, w, b):
        def body(xy, w, b):
            x, y = xy
            z = x @ w + y * b
            return z.relu(), z.sum(-1)

        return torch_map(body, (xs, ys), w, b)


@given(
    length=st.integers(2, 5),
    rows=st.integers(2, 4),
    others=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 5)), min_size=1, max_size=3),
)
def test_map_over_dynamic_length(length, rows, others):
    def inputs(t, r):
        return torch.randn(t, r, 3), torch.randn(t, r, 2), torch.randn(3, 2), torch.randn(2)

    onx = check_model(
        Mapped(), inputs(length, rows),
        dynamic_shapes=({0: "t", 1: "r"}, {0: "t", 1: "r"}, None, None),
        other_inputs=[inputs(t, r) for t, r in others],
    )
    (node,) = scan_nodes(onx)
    assert len(node.input) == 2  # no states: the two mapped tensors


class MapInWhile(torch.nn.Module):
    """A map inside a while_loop's body: Scan inside Loop."""

    def forward(self, xs, n):
        from torch._higher_order_ops.while_loop import while_loop

        def cond_fn(i, xs):
            return i < n.shape[0]

        def body_fn(i, xs):
            return i + 1, torch_map(lambda x: x.cumsum(0) * 0.5, xs)

        return while_loop(cond_fn, body_fn, (0, xs))[1]


@given(trips=st.lists(st.integers(0, 4), min_size=1, max_size=3))
def test_map_inside_while_loop(trips):
    check_model(
        MapInWhile(), (torch.rand(3, 4), torch.rand(2)),
        dynamic_shapes=({0: "t"}, {0: "n"}),
        other_inputs=[(torch.rand(t + 1, 4), torch.rand(t)) for t in trips],
    )


def test_unknown_scan_arguments_are_refused():
    """A scan node with an argument this tonnx does not know (a later torch's) is refused
    with the construct's name, never converted without it."""
    ep = torch.export.export(CondInScan(), (torch.randn(4), torch.randn(3, 4)))
    node = next(n for n in ep.graph.nodes if n.target is torch.ops.higher_order.scan)
    node.args = (*node.args, True)
    with pytest.raises(tonnx.UnsupportedError, match="scan.*arguments beyond"):
        tonnx.to_onnx(ep)
