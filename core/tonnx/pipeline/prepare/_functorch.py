"""functorch regions (torch.vmap, torch.func) torch.export leaves in a pre-dispatch graph.

A ``torch.vmap`` in ``forward`` is recorded as ``_vmap_increment_nesting``,
``_add_batch_dim``, the per-example ops, ``_remove_batch_dim``, ``_vmap_decrement_nesting``
(``torch._functorch.predispatch``). Retracing the program (``run_decompositions({})``, what
torch.export's own lowering does) runs the vmap and leaves its batched ATen ops: exact, no
converter needed.
"""

from __future__ import annotations

from tonnx._errors import UnsupportedError

#: where the functorch ops torch.export records live (torch._functorch.predispatch)
_MODULES = ("torch._functorch",)
_EXPLANATION = (
    "the model holds a torch.vmap / torch.func region (torch._functorch ops) torch.export "
    "left in the graph, and retracing the program to lower it to batched ATen ops failed. "
    "Rewrite the region with batched tensor ops (a leading batch dimension, broadcasting, "
    "torch.bmm/einsum)."
)


def has_functorch_ops(graph_module) -> bool:
    """Whether a node of ``graph_module`` or of its subgraphs is a functorch op."""
    for module in graph_module.modules():
        graph = getattr(module, "graph", None)
        for node in graph.nodes if graph is not None else ():
            if node.op == "call_function" and getattr(node.target, "__module__", "").startswith(_MODULES):
                return True
    return False


def lower_functorch(ep):
    """``ep`` retraced, its vmap regions turned into batched ATen ops."""
    try:
        return ep.run_decompositions({})
    except Exception as e:  # torch's retrace failing is the user's to fix, with the reason
        raise UnsupportedError(f"{_EXPLANATION} (the retrace failed: {type(e).__name__}: {e})") from e
