"""``invoke_subgraph`` (``torch.compiler.nested_compile_region``) as a local ONNX function.

torch.export (strict) keeps a marked region that repeats as one submodule
(``repeated_subgraph0``) called by ``invoke_subgraph(subgraph, identifier, *operands)``;
the weights of each call are operands. The submodule is converted once, into the body of
a function of the domain ``pkg.tonnx.subgraphs``, and each call becomes one node calling
it: a 32-layer model marked so holds one copy of the layer's graph. onnxruntime inlines
local functions when it loads the model, so they cost nothing at run time.
"""

from __future__ import annotations

import re

from tonnx._errors import UnsupportedError
from tonnx.pipeline.interpret.control_flow import _bodies

#: Domain of the functions tonnx makes from ``invoke_subgraph`` regions.
DOMAIN = "pkg.tonnx.subgraphs"


def convert_invoke_subgraph(interp, gm, node) -> None:
    sub_node, identifier, *operands = node.args
    if node.kwargs:
        raise UnsupportedError(
            f"invoke_subgraph node {node.format_node()} has keyword arguments, which this "
            f"tonnx does not know; report it with the torch version."
        )
    sub = _bodies.submodule(gm, sub_node, "invoke_subgraph")
    values = [interp.map(a) for a in operands]
    for v in values:
        if v is not None and type(v) is not str and not isinstance(v, (bool, int, float)):
            raise UnsupportedError(
                f"invoke_subgraph node {node.format_node()} passes {v!r} "
                f"({type(v).__name__}) to its region; only tensors, sizes and numbers are "
                f"converted."
            )
    # a number is part of the body (a region called with other numbers is another function)
    constants = tuple((i, type(v).__name__, v) for i, v in enumerate(values) if type(v) is not str)
    key = ("invoke_subgraph", id(sub), constants)
    name = interp.cache.get(key)
    if name is None:
        name = _define(interp, node, sub, sub_node.target, values)
        interp.cache[key] = name
    g = interp.g
    _bodies.start(interp, g, node, "invoke_subgraph")
    info = interp.namer.info(node)
    outputs = _bodies.output_names(interp, g, node, info)
    names = g.make_node(name, [v for v in values if type(v) is str], outputs, domain=DOMAIN)
    _bodies.bind(interp, g, node, info, names)


def _define(interp, node, sub, target: str, values: list) -> str:
    """Converts ``sub`` into the body of a new function; returns the function's name."""
    g = interp.g
    base = re.sub(r"\W", "_", target) or "subgraph"
    name, n = base, 1
    while (DOMAIN, name) in g.functions:
        name, n = f"{base}_{n}", n + 1
    body = g.make_function(DOMAIN, name)
    _bodies.start(interp, body, node, "invoke_subgraph")
    bound = []
    for p, v in zip(_bodies.placeholders(sub), values):
        if type(v) is str:
            bound.extend(_bodies.inputs_like(interp, body, [p], ""))
        else:
            bound.append(v)
    results = _bodies.run(interp, body, sub, bound)
    _bodies.start(interp, body, node, "invoke_subgraph")
    _bodies.declare_outputs(interp, body, sub, results)
    # torch may trace one region twice (another guard, another identifier): same nodes
    same = interp.cache.setdefault(("invoke_subgraph bodies",), {})
    found = same.setdefault(_canonical(body), name)
    if found != name:
        del g.functions[(DOMAIN, name)]
    return found


def _canonical(body) -> bytes:
    """The function's nodes, names of nodes and metadata left out."""
    import onnx

    from tonnx.builder._proto import fill_function

    proto = onnx.FunctionProto()
    fill_function(proto, body)
    proto.name = ""
    for n in proto.node:
        n.name = ""
        del n.metadata_props[:]
    return proto.SerializeToString(deterministic=True)
