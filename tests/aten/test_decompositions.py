"""Decomposition converters: torch's decompositions traced per node, converted op by op.

The ops below have no direct converter in the aten pack: torch.export keeps them in the
graph and the pack's decomposition converters (priority 50) lower them. Each test checks
the numbers against torch eager in onnxruntime, with dynamic shapes where they apply.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, op_module
from tonnx_aten import decompositions
from tonnx_aten._table import converters

F = torch.nn.functional

#: ops of issue 9's list (and the everyday tail) served by a decomposition, with a model
CASES = {
    "aten::sinc.default": (torch.sinc, 1),
    "aten::deg2rad.default": (torch.deg2rad, 1),
    "aten::rad2deg.default": (torch.rad2deg, 1),
    "aten::logaddexp.default": (torch.logaddexp, 2),
    "aten::logaddexp2.default": (torch.logaddexp2, 2),
    "aten::xlogy.Tensor": (lambda a, b: torch.xlogy(a.abs(), b), 2),
    "aten::isposinf.default": (lambda a: torch.isposinf(a / (a - a.round())), 1),
    "aten::isneginf.default": (lambda a: torch.isneginf(a / (a - a.round())), 1),
    "aten::linalg_cross.default": (lambda a, b: torch.linalg.cross(a[..., :3], b[..., :3]), 2),
    "aten::mse_loss.default": (F.mse_loss, 2),
    "aten::l1_loss.default": (F.l1_loss, 2),
    "aten::smooth_l1_loss.default": (F.smooth_l1_loss, 2),
    "aten::huber_loss.default": (lambda a, b: F.huber_loss(a, b, delta=0.5), 2),
    "aten::binary_cross_entropy.default": (lambda a, b: F.binary_cross_entropy(a.sigmoid(), b.sigmoid()), 2),
    "aten::binary_cross_entropy_with_logits.default": (lambda a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid()), 2),
    "aten::kl_div.default": (lambda a, b: F.kl_div(a.log_softmax(-1), b.softmax(-1), reduction="batchmean"), 2),
    "aten::broadcast_tensors.default": (lambda a, b: torch.broadcast_tensors(a, b[:1]), 2),
    "aten::numpy_T.default": (lambda a, b: a @ b.T, 2),
    "aten::kron.default": (torch.kron, 2),
    "aten::trace.default": (torch.trace, 1),
    "aten::rot90.default": (torch.rot90, 1),
    "aten::atleast_3d.default": (torch.atleast_3d, 1),
}


def _served_by_decomposition(key: str) -> bool:
    found = [c for c in converters() if c.key == key]
    return bool(found) and all(hasattr(c.function, "expand") for c in found)


@pytest.mark.parametrize("key", sorted(CASES))
def test_listed_op_is_served_by_a_decomposition(key):
    assert _served_by_decomposition(key), f"{key} has a direct converter now: move its test"


@pytest.mark.parametrize("key", sorted(CASES))
@settings(max_examples=3)  # per op: every op of the list is exercised in CI
@given(
    rows=st.integers(1, 4),
    cols=st.integers(3, 6),
    seed=st.integers(0, 1000),
)
def test_decomposed_op_matches_torch(key, rows, cols, seed):
    fn, n = CASES[key]
    gen = torch.Generator().manual_seed(seed)
    tensors = [torch.randn(rows, cols, generator=gen) * 3 for _ in range(n)]
    check_model(op_module(fn, n), tuple(tensors), expect_ops=[key])


@pytest.mark.parametrize("key", ["aten::sinc.default", "aten::binary_cross_entropy_with_logits.default", "aten::numpy_T.default", "aten::mse_loss.default", "aten::broadcast_tensors.default"])
def test_dynamic_shapes_survive_the_decomposition(key):
    fn, n = CASES[key]
    tensors = tuple(torch.randn(4, 5) for _ in range(n))
    others = [tuple(torch.randn(7, 5) for _ in range(n)), tuple(torch.randn(2, 5) for _ in range(n))]
    onx = check_model(
        op_module(fn, n), tensors, dynamic_shapes=tuple({0: "batch"} for _ in range(n)),
        other_inputs=others, expect_ops=[key],
    )
    assert onx.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_records_are_computed_and_below_direct_converters():
    records = [c for c in converters() if hasattr(c.function, "expand")]
    assert len(records) > 500  # computed from torch's tables, not hand-listed
    direct = {c.key for c in converters() if not hasattr(c.function, "expand")}
    for record in records:
        assert record.priority == decompositions.PRIORITY < 100
        assert record.function.__qualname__ == f"decomposed[{record.key}]"
        assert "decomposed by torch's decomposition" in record.function.__doc__.lower()
    # the pack's direct converters win where both exist (aten::linear, say)
    assert "aten::linear.default" in direct
    assert any(r.key == "aten::linear.default" for r in records)


def test_nodes_record_the_decomposition():
    onx = tonnx.to_onnx(op_module(torch.sinc, 1), (torch.randn(3),))
    metadata = [{p.key: p.value for p in n.metadata_props} for n in onx.graph.node]
    assert any(m.get("pkg.tonnx.expanded_from", "").endswith("aten::sinc.default") for m in metadata)


def test_a_repeated_call_is_traced_once(monkeypatch):
    calls = []
    trace = decompositions._trace

    def counting(*args, **kwargs):
        calls.append(args[0])
        return trace(*args, **kwargs)

    monkeypatch.setattr(decompositions, "_trace", counting)

    class Many(torch.nn.Module):
        def forward(self, x):
            for _ in range(12):
                x = torch.sinc(x) + 1
            return torch.sinc(x[:2])

    check_model(Many(), (torch.randn(4, 3),))
    assert len(calls) == 2  # (4, 3) once for 12 nodes, then (2, 3)


def test_a_decomposition_reaching_missing_ops_is_reported_with_the_others():
    """Every missing op at once, before conversion: those decompositions reach included."""

    class Tail(torch.nn.Module):
        def forward(self, x):
            return torch.special.erfcx(x), torch.erfinv(x.tanh()), torch.fft.rfft(x).abs()

    with pytest.raises(tonnx.ConverterNotFoundError) as info:
        tonnx.to_onnx(Tail(), (torch.randn(8),), dispatcher=tonnx.Dispatcher(packs=["no:prims"]))
    message = str(info.value)
    assert "prims::erfcx" in message and "prims::erf_inv" in message and "prims::fft_r2c" in message


def test_a_decomposition_that_specializes_a_dynamic_dim_is_refused():
    """A trace that would add a guard on a dynamic dimension is not a graph for all sizes."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    env = ShapeEnv()
    fake = FakeTensorMode(shape_env=env)
    dynamic = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC, DimDynamic.STATIC])
    t = fake.from_tensor(torch.randn(4, 3), symbolic_context=dynamic)

    def branchy(x):  # a decomposition branching on a size
        return x * 2 if x.shape[0] > 2 else x

    with pytest.raises(tonnx.UnsupportedError, match="specializes a dynamic dimension"):
        decompositions._trace(torch.ops.aten.sinc.default, branchy, (t,), {})


@settings(max_examples=10)
@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 5),
    n=st.integers(1, 6),
    accumulate=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.int64]),
    seed=st.integers(0, 1000),
)
def test_unsafe_masked_index_decomposition_assigning_into_its_index_list(rows, cols, n, accumulate, dtype, seed):
    """Its decomposition assigns the clamped indices into the list FX hands as immutable."""
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, cols, generator=gen) * 10).to(dtype)
    i = torch.randint(-2, rows + 2, (n,), generator=gen)  # out of range where masked off
    j = torch.randint(-2, cols + 2, (n,), generator=gen)
    mask = (i >= 0) & (i < rows) & (j >= 0) & (j < cols)
    values = (torch.randn(n, generator=gen) * 10).to(dtype)
    if accumulate:
        def fn(x, mask, i, j, v):
            return torch.ops.aten._unsafe_masked_index_put_accumulate(x, mask, [i, j], v)

        key = "aten::_unsafe_masked_index_put_accumulate.default"
        tensors = (x, mask, i, j, values)
    else:
        def fn(x, mask, i, j):
            return torch.ops.aten._unsafe_masked_index(x, mask, [i, j], -7)

        key = "aten::_unsafe_masked_index.default"
        tensors = (x, mask, i, j)
    assert _served_by_decomposition(key)
    check_model(op_module(fn, len(tensors)), tensors, expect_ops=[key])


@settings(max_examples=10)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple),
    reduction=st.sampled_from([0, 1, 2]),
    margin=st.sampled_from([0.0, 0.5, 1.0, -0.25]),
    dtype=st.sampled_from([torch.float32, torch.float16]),
    seed=st.integers(0, 1000),
)
def test_ref_losses_with_atens_integer_reduction(shape, reduction, margin, dtype, seed):
    """ATen's schema carries reduction as an int; torch._refs' losses take a string."""
    gen = torch.Generator().manual_seed(seed)
    a, b = (torch.randn(shape, generator=gen).to(dtype) for _ in range(2))
    target = (torch.randint(0, 2, shape, generator=gen) * 2 - 1).to(dtype)
    atol = 1e-2 if dtype == torch.float16 else 1e-4

    def hinge(a, t):
        return torch.ops.aten.hinge_embedding_loss(a, t, margin, reduction)

    def ranking(a, b, t):
        return torch.ops.aten.margin_ranking_loss(a, b, t, margin, reduction)

    def huber(a, b):
        return torch.ops.aten.huber_loss(a, b, reduction, 0.5)

    check_model(op_module(hinge, 2), (a, target), expect_ops=["aten::hinge_embedding_loss.default"], atol=atol, rtol=atol)
    check_model(op_module(ranking, 3), (a, b, target), expect_ops=["aten::margin_ranking_loss.default"], atol=atol, rtol=atol)
    check_model(op_module(huber, 2), (a, b), expect_ops=["aten::huber_loss.default"], atol=atol, rtol=atol)


def test_ref_loss_with_an_unknown_reduction_is_refused():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as fake:
        t = fake.from_tensor(torch.randn(3))
    op = torch.ops.aten.hinge_embedding_loss.default
    with pytest.raises(tonnx.UnsupportedError, match="reduction=5"):
        decompositions._trace(op, decompositions.decomposition_table()[op], (t, t, 1.0, 5), {})
