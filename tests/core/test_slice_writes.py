"""Writes into slices of a fresh tensor (``x[..., :d] = y``) convert without functionalizing
the program: the tensor is rebound to a ``slice_scatter`` of it. Every other case (a view
read after a write, dynamic slice bounds, a write into an input) is functionalized, and all
of them match torch."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.pipeline.prepare._mutations import needs_functionalization, slice_write
from tonnx.testing import check_model


def _program(model, args, dynamic_shapes=None):
    return torch.export.export(model, args, dynamic_shapes=dynamic_shapes)


class Halves(torch.nn.Module):
    """DeepSeek-V3's ``expand_kv``: a new tensor filled by two slice writes, then read."""

    def forward(self, a, b):
        x = a.new_empty(a.shape[0], a.shape[1], a.shape[2] + b.shape[2])
        x[..., : a.shape[2]] = a
        x[..., a.shape[2] :] = b
        return x * 2


class Nested(torch.nn.Module):
    """A chain of slices, a read between two writes, a broadcast and a cast into the view."""

    def forward(self, a, b):
        x = torch.zeros(2, 6, 4)
        x[:, 1:4][:, 0:2, 1:3] = b
        total = x.sum()
        x[:, 4:] = (7 * a[:, :1]).to(torch.float64)
        x[:, ::3, 3:4] = a[:, :1, :1] + 1.5
        return x, total


def test_writes_into_slices_of_a_fresh_tensor_are_rebound():
    a, b = torch.randn(2, 3, 5), torch.randn(2, 3, 2)
    ep = _program(Halves(), (a, b))
    writes = [n for n in ep.graph.nodes if slice_write(n) is not None]
    assert len(writes) == 2 and not needs_functionalization(ep.graph)
    onx = check_model(Halves(), (a, b))
    assert any(
        p.key == "pkg.tonnx.expanded_from" and "copy_" in p.value
        for n in onx.graph.node
        for p in n.metadata_props
    )


@given(seed=st.integers(0, 2**16), rows=st.integers(1, 4))
def test_chains_reads_between_writes_broadcasts_and_casts(seed, rows):
    gen = torch.Generator().manual_seed(seed)
    a, b = torch.randn(2, rows, 4, generator=gen), torch.randn(2, 2, 2, generator=gen)
    assert not needs_functionalization(_program(Nested(), (a, b)).graph)
    check_model(Nested(), (a, b))


class ViewReadAfterWrite(torch.nn.Module):
    def forward(self, b):
        x = torch.zeros(2, 6)
        v = x[:, :2]  # an alias read after the write below changed it
        x[:, 1:3] = b
        return v + 1


class WriteIntoAnotherTensorsView(torch.nn.Module):
    def forward(self, x, b):
        y = x * 1
        v = y[:, 1:]  # a view of y written through, then y read: not a fresh chain
        v[:, :2] = b
        return y + v.sum()


def test_other_writes_through_views_are_functionalized_and_exact():
    b = torch.randn(2, 2)
    assert needs_functionalization(_program(ViewReadAfterWrite(), (b,)).graph)
    check_model(ViewReadAfterWrite(), (b,))
    args = (torch.randn(2, 5), b)
    assert needs_functionalization(_program(WriteIntoAnotherTensorsView(), args).graph)
    check_model(WriteIntoAnotherTensorsView(), args)


def test_dynamic_slice_bounds_are_functionalized_and_exact():
    a, b = torch.randn(2, 3, 5), torch.randn(2, 3, 2)
    dims = {0: torch.export.Dim("batch"), 2: torch.export.Dim("n")}
    ep = _program(Halves(), (a, b), dynamic_shapes=(dims, {0: dims[0]}))
    assert needs_functionalization(ep.graph)
    check_model(
        Halves(),
        (a, b),
        dynamic_shapes=({0: "batch", 2: "n"}, {0: "batch"}),
        other_inputs=[(torch.randn(3, 3, 7), torch.randn(3, 3, 2))],
    )


class NoGradPositions(torch.nn.Module):
    """PEGASUS-X's sinusoidal positions (transformers 5.23): a ``@torch.no_grad()`` method
    fills a fresh tensor through two slice writes, then returns a view of it. The method is
    a ``wrap_with_set_grad_enabled`` subgraph; its writes were dropped (the positions came
    out zero) because only the top-level graph was checked for writes through views."""

    @torch.no_grad()
    def positions(self, x):
        seq, half = x.shape[1], x.shape[2] // 2
        position = torch.arange(seq).unsqueeze(1)
        freq = torch.exp(torch.arange(half).type_as(x) * -0.3)
        table = torch.zeros(seq, 2 * half)
        table[:, :half] = torch.sin(position * freq)
        table[:, half:] = torch.cos(position * freq)
        return table[None].expand(x.shape[0], -1, -1)

    def forward(self, x):
        return x + self.positions(x)


def test_writes_inside_a_no_grad_subgraph_are_not_dropped():
    x = torch.randn(2, 5, 8)
    ep = _program(NoGradPositions(), (x,))
    assert any("wrap_with_set_grad_enabled" in str(n.target) for n in ep.graph.nodes)
    assert needs_functionalization(ep.graph)
    check_model(NoGradPositions(), (x,))


class _Writes(torch.nn.Module):
    """Slice writes into a fresh tensor, drawn: where they run (top level or a no_grad
    subgraph) and how the tensor is read afterwards (plain, through a view, or a view
    taken before the writes)."""

    def __init__(self, no_grad: bool, read: str, split: int):
        super().__init__()
        self.no_grad, self.read, self.split = no_grad, read, split

    def fill(self, a, b):
        x = torch.zeros(a.shape[0], 6)
        early = x[:, :2]
        x[:, : self.split] = a[:, : self.split]
        x[:, self.split :] = b[:, self.split :]
        if self.read == "view":
            return x[None].expand(2, -1, -1) * 1
        if self.read == "early view":
            return early + 1
        return x * 1

    def forward(self, a, b):
        if self.no_grad:
            with torch.no_grad():
                return self.fill(a, b) + 0
        return self.fill(a, b)


@given(
    no_grad=st.booleans(),
    read=st.sampled_from(["plain", "view", "early view"]),
    split=st.integers(1, 5),
    rows=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_slice_writes_at_top_level_and_in_subgraphs(no_grad, read, split, rows, seed):
    gen = torch.Generator().manual_seed(seed)
    a, b = torch.randn(rows, 6, generator=gen), torch.randn(rows, 6, generator=gen)
    check_model(_Writes(no_grad, read, split), (a, b))


def test_a_write_the_interpreter_would_lose_is_an_error(monkeypatch):
    """Should a write through a view ever reach the interpreter unfunctionalized, it fails
    instead of dropping the write."""
    import tonnx
    from tonnx.pipeline.prepare import _mutations

    monkeypatch.setattr(_mutations, "needs_functionalization", lambda graph: False)
    with pytest.raises(tonnx.ConversionError, match="not functionalized"):
        tonnx.to_onnx(ViewReadAfterWrite(), (torch.randn(2, 2),))
