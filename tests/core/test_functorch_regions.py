"""torch.vmap in forward: torch.export leaves functorch ops (_vmap_increment_nesting,
_add_batch_dim, ...) in the graph; tonnx lowers them to batched ATen ops by retracing
(refused before with a bare list of torch._functorch ops)."""

from __future__ import annotations

import torch
from torch.export import Dim

import tonnx
from tonnx.testing import check_model


class Vmapped(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 5))

    def forward(self, x, y):
        return torch.vmap(lambda a, b: (a @ self.weight) * b.sum() + a.mean())(x, y)


def _functorch_nodes(ep) -> list[str]:
    return [str(n.target) for n in ep.graph.nodes if "_functorch" in getattr(n.target, "__module__", "")]


def test_a_vmap_region_is_lowered_exactly():
    x, y = torch.randn(3, 2, 4), torch.randn(3, 6)
    assert _functorch_nodes(torch.export.export(Vmapped(), (x, y)))  # what torch.export leaves
    check_model(Vmapped(), (x, y), atol=1e-5, rtol=1e-5)


def test_a_vmap_region_with_a_dynamic_batch():
    x, y = torch.randn(3, 2, 4), torch.randn(3, 6)
    batch = Dim("batch", min=2)
    check_model(
        Vmapped(), (x, y), dynamic_shapes=({0: batch}, {0: batch}),
        other_inputs=[(torch.randn(5, 2, 4), torch.randn(5, 6))], atol=1e-5, rtol=1e-5,
    )


def test_functorch_ops_left_in_the_graph_are_explained():
    from tonnx.dispatch._manager import default_manager

    manager = default_manager()
    dispatcher = tonnx.Dispatcher()
    registry = manager.registry(20, dispatcher)
    error = manager.not_found_error(
        {"torch._functorch.predispatch._add_batch_dim": 2}, registry, manager.pack_config(dispatcher)
    )
    assert isinstance(error, tonnx.ConverterNotFoundError)
    assert "torch.vmap" in str(error) and "batched tensor ops" in str(error)
