"""torch.sym_ite (``t if b else f`` on sizes) in the graph: converted as a Where.

torch.export records it for ``torch._check_tensor_all`` (the bool of ``_is_all_true``
becomes 1/0) and for size arithmetic choosing between two symbolic sizes.
"""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

from tonnx.testing import check_model


class PickSize(torch.nn.Module):
    """A tensor of max(n, 3) ones, chosen by sym_ite between two SymInts."""

    def forward(self, x):
        n = x.shape[0]
        size = torch.sym_ite(n > 3, n, n * 0 + 3)
        return x.new_ones(size) * 2


class CheckedAll(torch.nn.Module):
    """torch._check_tensor_all: _is_all_true, item, then sym_ite(item, 1, 0) and asserts."""

    def forward(self, x):
        torch._check_tensor_all(x > -10)
        return x + 1


def _targets(model, args, dynamic_shapes=None) -> set:
    ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
    return {n.target for n in ep.graph.nodes if n.op == "call_function"}


@pytest.mark.parametrize("sizes", [(5, 2), (2, 7)])
def test_sym_ite_between_symbolic_sizes(sizes):
    first, *others = (torch.rand(n) for n in sizes)
    dynamic = {"x": {0: Dim("n", min=1)}}
    assert torch.sym_ite in _targets(PickSize(), (first,), dynamic)
    check_model(PickSize(), (first,), dynamic_shapes=dynamic, other_inputs=[(o,) for o in others])


def test_sym_ite_of_a_tensor_check():
    x = torch.rand(3, 4)
    assert torch.sym_ite in _targets(CheckedAll(), (x,))
    check_model(CheckedAll(), (x,), expect_ops=["aten::_is_all_true.default"])
