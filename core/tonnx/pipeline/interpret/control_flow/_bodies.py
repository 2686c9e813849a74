"""What every control-flow construct does with a torch submodule: bind its placeholders,
convert its nodes into a builder (an ONNX subgraph or a function body), declare its results.
"""

from __future__ import annotations

import numpy as np

from tonnx._errors import UnsupportedError
from tonnx.builder._dtypes import numpy_dtype
from tonnx.pipeline.interpret._values import represented


def placeholders(sub) -> list:
    return [n for n in sub.graph.nodes if n.op == "placeholder"]


def submodule(gm, arg, construct: str):
    """The graph module a higher-order op's ``get_attr`` argument names."""
    if getattr(arg, "op", None) != "get_attr":
        raise UnsupportedError(
            f"{construct}: its function is {arg!r}, not a submodule of the exported graph; "
            f"torch.export always passes one, so the program was not made by torch.export."
        )
    return getattr(gm, arg.target)


def metadata(interp, node, construct: str) -> dict[str, str]:
    """The metadata every ONNX node carries, for the node the construct makes."""
    stack = node.meta.get("nn_module_stack")
    namespace = ""
    if stack:
        path, cls = next(reversed(stack.values()))
        namespace = f"{path}: {getattr(cls, '__name__', cls)}"
    found = {
        "namespace": namespace,
        "pkg.tonnx.fx_node": f"{node.name}: {interp.key_of(node.target)}",
        "pkg.tonnx.converter": f"tonnx:control_flow.{construct}",
    }
    trace = node.meta.get("stack_trace")
    if trace:
        found["pkg.tonnx.stack_trace"] = trace
    return found


def start(interp, g, node, construct: str) -> None:
    """Names and metadata of the nodes ``g`` makes next are the construct's."""
    g.node_prefix = node.name
    g.current_metadata = metadata(interp, node, construct)
    g.debug_context["fx node"] = node


def as_tensor(g, value, elem: int) -> str:
    """A value of the graph for ``value``: a name as is, a python number as a constant."""
    if type(value) is str:
        return value
    if isinstance(value, (bool, int, float)):
        return g.make_initializer("", np.array(value, dtype=numpy_dtype(elem)))
    raise UnsupportedError(f"{value!r} ({type(value).__name__}) is not a tensor nor a number.")


def inputs_like(interp, g, holders: list, prefix: str) -> list[str]:
    """Inputs of ``g`` typed as the placeholders ``holders`` of a submodule."""
    names = []
    for p in holders:
        info = interp.namer.info(p)
        name = g.unique_name(f"{prefix}_{p.name}" if prefix else p.name)
        names.append(g.make_tensor_input(name, *represented(info.dtypes[0], info.shapes[0])))
    return names


def run(interp, g, sub, values: list) -> list:
    """Converts ``sub`` into builder ``g`` with its placeholders bound to ``values``;
    returns its results (names, or python numbers a function returned as they are)."""
    holders = placeholders(sub)
    if len(holders) != len(values):
        raise UnsupportedError(
            f"Submodule {sub.__class__.__name__} takes {len(holders)} inputs, "
            f"the higher-order op gives {len(values)}."
        )
    saved = interp.g
    interp.g = g
    try:
        for p, v in zip(holders, values):
            interp.env[p] = v
        results = interp.run_graph(sub)
    finally:
        interp.g = saved
    if not isinstance(results, (list, tuple)):
        results = (results,)
    return [interp.map(r) for r in results]


def output_nodes(sub) -> list:
    """The FX values ``sub`` returns, as a list."""
    out = next(n for n in reversed(sub.graph.nodes) if n.op == "output").args[0]
    return list(out) if isinstance(out, (list, tuple)) else [out]


def declare_outputs(interp, g, sub, results: list, skip: int = 0) -> None:
    """``results`` become outputs of ``g``, each through its own Identity (an output
    may be an input or read twice), typed as ``sub``'s returned values from ``skip`` on."""
    for value, fx in zip(results, output_nodes(sub)[skip:]):
        info = interp.namer.info(fx) if hasattr(fx, "meta") else None
        if info is None or not info.dtypes:
            raise UnsupportedError(
                f"Submodule {sub.__class__.__name__} returns {fx!r}, which torch.export "
                f"records no tensor type for; ONNX subgraphs return tensors."
            )
        elem, shape = represented(info.dtypes[0], info.shapes[0])
        name = g.op.Identity(as_tensor(g, value, elem))
        g.make_tensor_output(name, elem, shape)


def output_names(interp, g, node, info) -> list[str]:
    """Names of the construct's results; one that nothing reads is named anyway (ONNX's
    Loop, Scan and If outputs are not optional)."""
    names = interp.output_names_of(node, info)
    return [n or g.unique_name(f"{node.name}_unused") for n in names]


def bind(interp, g, node, info, names) -> None:
    """The construct's results typed as torch says, and bound to its FX node."""
    names = (names,) if type(names) is str else tuple(names)
    for name, dtype, shape in zip(names, info.dtypes, info.shapes):
        if dtype is not None:
            g.types[name], g.shapes[name] = represented(dtype, shape)
    interp.env[node] = names
