"""``torch.cond`` as an ONNX If, and the wrappers torch.export leaves around a region
(``wrap_with_set_grad_enabled``, ``wrap_with_autocast``) inlined."""

from __future__ import annotations

from onnx import TensorProto

from tonnx.pipeline.interpret.control_flow import _bodies


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
    results = _bodies.run(interp, interp.g, sub, [interp.map(a) for a in operands])
    interp.env[node] = tuple(results)


def convert_cond(interp, gm, node) -> None:
    """``cond(pred, true_fn, false_fn, operands)`` as an ONNX If with two subgraphs
    that read the operands from the enclosing graph."""
    pred, true_node, false_node, operands = node.args
    info = interp.namer.info(node)
    parent = interp.g
    values = [interp.map(a) for a in operands]
    branches = []
    for branch in (true_node, false_node):
        sub = _bodies.submodule(gm, branch, "torch.cond")
        sg = parent.make_subgraph()
        results = _bodies.run(interp, sg, sub, values)
        _bodies.start(interp, sg, node, "cond")
        _bodies.declare_outputs(interp, sg, sub, results)
        branches.append(sg)
    _bodies.start(interp, parent, node, "cond")
    condition = _bodies.as_tensor(parent, interp.map(pred), TensorProto.BOOL)
    outputs = _bodies.output_names(interp, parent, node, info)
    names = parent.make_node(
        "If", [condition], outputs, then_branch=branches[0], else_branch=branches[1]
    )
    _bodies.bind(interp, parent, node, info, names)
