"""Higher-order ops torch.export emits for real models: inlined, or ``cond`` turned into If.

Each handler takes the interpreter that meets the node (its environment and builder)."""

from __future__ import annotations

from tonnx.pipeline.interpret._values import represented


def targets() -> dict:
    """HigherOrderOperator -> ``handler(interp, gm, node)``."""
    import torch

    hops = torch.ops.higher_order
    table = {}
    for name, handler in (
        ("wrap_with_set_grad_enabled", inline_wrapped),
        ("wrap_with_autocast", inline_wrapped),  # the ops inside carry autocast's dtypes
        ("cond", convert_cond),
    ):
        op = getattr(hops, name, None)
        if op is not None:
            table[op] = handler
    return table


def submodule_args(node) -> tuple:
    """(graph module node, operand args) of an inlined higher-order op."""
    name = node.target.__name__
    if name == "wrap_with_set_grad_enabled":
        return node.args[1], node.args[2:]
    if name == "wrap_with_autocast":
        return node.args[4], node.args[5:]
    raise AssertionError(name)


def inline_wrapped(interp, gm, node) -> None:
    """The wrapped submodule's nodes converted in place of the wrapper."""
    sub_node, operands = submodule_args(node)
    sub = getattr(gm, sub_node.target)
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    for p, a in zip(placeholders, operands):
        interp.env[p] = interp.map(a)
    results = interp.run_graph(sub)
    interp.env[node] = tuple(interp.map(r) for r in results)


def convert_cond(interp, gm, node) -> None:
    """``cond(pred, true_fn, false_fn, operands)`` as an ONNX If with two subgraphs."""
    pred, true_node, false_node, operands = node.args
    info = interp.namer.info(node)
    outputs = interp.output_names_of(node, info)
    outputs = [o or interp.g.unique_name(f"{node.name}_unused") for o in outputs]
    parent = interp.g
    branches = []
    for branch in (true_node, false_node):
        sub = getattr(gm, branch.target)
        sg = parent.make_subgraph()
        interp.g = sg
        try:
            placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
            for p, a in zip(placeholders, operands):
                interp.env[p] = interp.map(a)
            results = interp.run_graph(sub)
            for r, dtype, shape in zip(results, info.dtypes, info.shapes):
                out = sg.op.Identity(interp.map(r))
                sg.make_tensor_output(out, *represented(dtype, shape))
        finally:
            interp.g = parent
        branches.append(sg)
    parent.node_prefix = node.name
    names = parent.make_node(
        "If", [interp.map(pred)], outputs, then_branch=branches[0], else_branch=branches[1]
    )
    names = (names,) if type(names) is str else names
    for name, dtype, shape in zip(names, info.dtypes, info.shapes):
        parent.types[name], parent.shapes[name] = represented(dtype, shape)
    interp.env[node] = tuple(names)
