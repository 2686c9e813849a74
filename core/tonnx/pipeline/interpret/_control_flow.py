"""Higher-order ops torch.export emits: each one's handler, by op.

Each handler takes the interpreter that meets the node (its environment and builder), the
graph module holding the node, and the node; the constructs live in ``control_flow/``.
"""

from __future__ import annotations

from tonnx.pipeline.interpret.control_flow._cond import convert_cond, inline_wrapped, submodule_args
from tonnx.pipeline.interpret.control_flow._invoke_subgraph import convert_invoke_subgraph
from tonnx.pipeline.interpret.control_flow._scan import convert_map, convert_scan
from tonnx.pipeline.interpret.control_flow._while_loop import convert_while_loop

__all__ = ["submodule_args", "targets"]


def targets() -> dict:
    """HigherOrderOperator -> ``handler(interp, gm, node)``."""
    import torch

    hops = torch.ops.higher_order
    table = {}
    for name, handler in (
        ("wrap_with_set_grad_enabled", inline_wrapped),
        ("wrap_with_autocast", inline_wrapped),  # the ops inside carry autocast's dtypes
        ("cond", convert_cond),
        ("while_loop", convert_while_loop),
        ("scan", convert_scan),
        ("map_impl", convert_map),
        ("invoke_subgraph", convert_invoke_subgraph),
    ):
        op = getattr(hops, name, None)
        if op is not None:
            table[op] = handler
    return table
