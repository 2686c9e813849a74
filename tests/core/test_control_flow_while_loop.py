"""``while_loop`` -> ONNX Loop, checked against torch eager in onnxruntime.

Each exported model is run on other inputs too: other dynamic sizes, other trip counts
(zero included), other data deciding when the loop stops.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch._higher_order_ops.while_loop import while_loop

import tonnx
from tonnx.testing import check_model


def loop_nodes(onx) -> list:
    return [n for n in onx.graph.node if n.op_type == "Loop"]


class CountToSize(torch.nn.Module):
    """Trip count = n's dynamic size; the counter is a carried int; w is read from outside."""

    def forward(self, x, n, w):
        def cond_fn(i, x):
            return i < n.shape[0]

        def body_fn(i, x):
            return i + 1, x * w + n.sum()

        i, y = while_loop(cond_fn, body_fn, (0, x))
        return y, y * i


@given(
    batch=st.integers(2, 5),
    trips=st.integers(2, 6),
    others=st.lists(st.tuples(st.integers(1, 6), st.integers(0, 7)), min_size=1, max_size=3),
)
def test_trip_count_is_a_dynamic_size(batch, trips, others):
    x, n, w = torch.rand(batch, 3), torch.rand(trips), torch.rand(3)
    onx = check_model(
        CountToSize(), (x, n, w),
        dynamic_shapes=({0: "batch"}, {0: "trips"}, None),
        other_inputs=[(torch.rand(b, 3), torch.rand(t), torch.rand(3)) for b, t in others],
    )
    assert len(loop_nodes(onx)) == 1


class GrowUntil(torch.nn.Module):
    """The number of iterations depends on the values: no count to read anywhere."""

    def forward(self, x, limit):
        def cond_fn(x):
            return x.abs().sum() < limit

        def body_fn(x):
            return (x * 1.5 + 0.25,)

        return while_loop(cond_fn, body_fn, (x,))[0]


@given(
    shape=st.tuples(st.integers(2, 4), st.integers(2, 4)),
    limits=st.lists(st.floats(0.0, 500.0), min_size=1, max_size=4),
)
def test_data_dependent_trip_count(shape, limits):
    x = torch.rand(*shape)
    check_model(
        GrowUntil(), (x, torch.tensor(50.0)),
        dynamic_shapes=({0: "a", 1: "b"}, None),
        other_inputs=[(torch.rand(*shape), torch.tensor(v)) for v in limits]
        + [(torch.rand(3, 5), torch.tensor(20.0))],
    )


class CondInside(torch.nn.Module):
    """A torch.cond in the body: an If inside the Loop's body, its branch chosen per
    iteration by the carried values."""

    def forward(self, x, steps):
        def cond_fn(i, x):
            return i < steps.shape[0]

        def body_fn(i, x):
            y = torch.cond(x.sum() > 0, lambda a: a - 1.0, lambda a: a * -2.0 + 0.5, (x,))
            return i + 1, y

        return while_loop(cond_fn, body_fn, (0, x))[1]


@given(
    values=st.lists(st.floats(-3.0, 3.0), min_size=2, max_size=6),
    steps=st.lists(st.integers(0, 8), min_size=1, max_size=3),
)
def test_cond_inside_while_loop(values, steps):
    x = torch.tensor(values)
    onx = check_model(
        CondInside(), (x, torch.rand(3)),
        dynamic_shapes=({0: "n"}, {0: "steps"}),
        other_inputs=[(torch.tensor(values) * -1, torch.rand(s)) for s in steps],
    )
    (loop,) = loop_nodes(onx)
    body = next(a.g for a in loop.attribute if a.name == "body")
    assert "If" in [n.op_type for n in body.node]


class Nested(torch.nn.Module):
    """A while_loop in a while_loop's body: the inner trip count is the outer counter."""

    def forward(self, x, n):
        def outer_cond(i, x):
            return i < n.shape[0]

        def outer_body(i, x):
            def inner_cond(j, y):
                return j < i

            def inner_body(j, y):
                return j + 1, y * 0.5 + 1.0

            _, y = while_loop(inner_cond, inner_body, (0, x))
            return i + 1, y + x

        return while_loop(outer_cond, outer_body, (0, x))[1]


@given(size=st.integers(2, 5), trips=st.lists(st.integers(0, 6), min_size=1, max_size=3))
def test_nested_while_loops(size, trips):
    x = torch.rand(size)
    check_model(
        Nested(), (x, torch.rand(3)),
        dynamic_shapes=({0: "s"}, {0: "n"}),
        other_inputs=[(torch.rand(size + 1), torch.rand(t)) for t in trips],
    )


class FloatCarry(torch.nn.Module):
    """Several carried tensors of different dtypes, one of them a 0-d tensor."""

    def forward(self, x, k):
        def cond_fn(i, s, x):
            return i < k

        def body_fn(i, s, x):
            return i + 1, s * 2.0, x + s

        i, s, y = while_loop(cond_fn, body_fn, (torch.tensor(0), torch.tensor(1.0), x))
        return y * s, i


@given(k=st.integers(-1, 6))
def test_tensor_carries_of_several_dtypes(k):
    check_model(
        FloatCarry(), (torch.rand(2, 3), torch.tensor(3)),
        other_inputs=[(torch.rand(2, 3), torch.tensor(k))],
    )


def test_unknown_while_loop_arguments_are_refused():
    """A while_loop node with an argument this tonnx does not know (a later torch's) is
    refused with the construct's name, never converted without it."""
    ep = torch.export.export(GrowUntil(), (torch.rand(2, 2), torch.tensor(5.0)))
    node = next(n for n in ep.graph.nodes if n.target is torch.ops.higher_order.while_loop)
    node.args = (*node.args, True)
    with pytest.raises(tonnx.UnsupportedError, match="while_loop.*arguments beyond"):
        tonnx.to_onnx(ep)
