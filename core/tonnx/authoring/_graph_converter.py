"""``convert_graph``: a converter that lowers its op into an FX graph of other ops.

Such a converter (the aten pack's decomposition converters) gives its function an
``expand(args, kwargs, cache)`` attribute returning a ``torch.fx.GraphModule`` built from
the op's arguments as torch's meta values (FakeTensors keep symbolic shapes). The
interpreter calls it while planning, so every op the graph reaches is resolved through
the current registry with the rest of the model and missing ones are reported together;
``cache`` lives for one export, to trace once per distinct call. The function body then
calls ``convert_graph``, which converts that graph in place of the node.

Why a hook on ``sts`` and not a builder method: converting FX nodes is the interpreter's
job (registry, environment, types from meta), the builder knows nothing of FX.
"""

from __future__ import annotations

from tonnx._errors import ConversionError


def convert_graph(g, sts, outputs):
    """Emits the graph the converter's ``expand`` made for this node; returns its results.

    The graph's placeholders are bound to the node's FX arguments (tensors, SymInts) in
    pytree leaf order; its results are returned as the interpreter expects them.
    """
    run = getattr(sts, "_convert_graph", None)
    if run is None:
        raise ConversionError(
            "convert_graph() is for converters whose function has an `expand` attribute "
            "(see tonnx.authoring._graph_converter): the interpreter plans that graph before conversion."
        )
    return run()
