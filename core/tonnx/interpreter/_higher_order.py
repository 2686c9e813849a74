"""Higher-order ops torch.export emits for real models: inlined or turned into If."""

from __future__ import annotations


def targets() -> dict:
    """HigherOrderOperator -> method name of the Interpreter that handles it."""
    import torch

    hops = torch.ops.higher_order
    table = {}
    for name, method in (
        ("wrap_with_set_grad_enabled", "_inline_set_grad"),
        ("wrap_with_autocast", "_inline_autocast"),
        ("cond", "_convert_cond"),
    ):
        op = getattr(hops, name, None)
        if op is not None:
            table[op] = method
    return table


def submodule_args(node) -> tuple:
    """(graph module node, operand args) of an inlined higher-order op."""
    name = node.target.__name__
    if name == "wrap_with_set_grad_enabled":
        return node.args[1], node.args[2:]
    if name == "wrap_with_autocast":
        return node.args[4], node.args[5:]
    raise AssertionError(name)
