"""A ``copy_`` into slices of a fresh tensor (``base[..., :d] = src``), functionally.

The write becomes ``base = slice_scatter(base, copy(base[..., :d], src), -1, 0, d)``, built
as a small FX graph the registry converts like any other (the core emits no op itself).
The views are taken again from ``base``'s value at the write, so what earlier writes put
into ``base`` is kept; a chain of slices nests one ``slice_scatter`` per view.
"""

from __future__ import annotations


def _node(graph, target, args: tuple, kwargs: dict, like):
    made = graph.call_function(target, args, kwargs)
    made.meta["val"] = like.meta["val"]
    return made


def scatter_graph(write, chain: list):
    """The graph ``(base, src) -> new base`` of ``write``, a ``copy_`` into ``chain[-1]``
    (``chain`` is ``[base, view_1, ..., view_k]``, see ``_mutations.slice_write``)."""
    import torch
    from torch import fx

    aten = torch.ops.aten
    base, views = chain[0], chain[1:]
    graph = fx.Graph()
    fresh = [graph.placeholder("base")]
    fresh[0].meta["val"] = base.meta["val"]
    src = graph.placeholder("src")
    src.meta["val"] = write.args[1].meta["val"]
    for view in views:
        fresh.append(_node(graph, aten.slice.Tensor, (fresh[-1], *view.args[1:]), dict(view.kwargs), view))
    value = _node(graph, aten.copy.default, (fresh[-1], src), {}, views[-1])
    for view, parent, like in zip(reversed(views), reversed(fresh[:-1]), reversed(chain[:-1])):
        args = (parent, value, *view.args[1:])
        value = _node(graph, aten.slice_scatter.default, args, dict(view.kwargs), like)
    graph.output(value)
    return fx.GraphModule(torch.nn.Module(), graph)


def write_slices(interp, node) -> None:
    """``node`` (a ``copy_`` into slices of a fresh tensor, planned into
    ``interp.slice_writes``) rebinds that tensor to the converted scatter graph's result."""
    sub, base = interp.slice_writes[node]
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    interp.env[placeholders[0]] = interp.env[base]
    interp.env[placeholders[1]] = interp.env[node.args[1]]
    g = interp.g
    saved = g.node_prefix, g.current_metadata, interp.expanding
    interp.expanding = f"{node.name}: {interp.key_of(node.target)}"
    try:
        interp.env[base] = interp.map(interp.run_graph(sub))
    finally:
        g.node_prefix, g.current_metadata, interp.expanding = saved
