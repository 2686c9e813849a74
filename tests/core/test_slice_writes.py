"""Writes into slices of a fresh tensor (``x[..., :d] = y``) convert without functionalizing
the program: the tensor is rebound to a ``slice_scatter`` of it. Every other case (a view
read after a write, dynamic slice bounds, a write into an input) is functionalized, and all
of them match torch."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.interpreter._mutations import needs_functionalization, slice_write
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
