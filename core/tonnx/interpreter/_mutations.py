"""In-place ops in torch.export's graph: rebound in place when safe, else functionalized.

torch.export's default IR keeps in-place ops (``add_``). When the mutated tensor is a
fresh intermediate with no view aliasing it, the interpreter simply rebinds the FX node to
the op's result; otherwise the program is functionalized first, so aliasing can never
produce a wrong number.
"""

from __future__ import annotations


def written_arguments(target) -> tuple[int, ...]:
    """Positions of the arguments an op overload writes to (empty for functional ops)."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.is_mutable:
        return ()
    return tuple(
        i
        for i, arg in enumerate(schema.arguments)
        if arg.alias_info is not None and arg.alias_info.is_write
    )


def _is_view(node) -> bool:
    schema = getattr(node.target, "_schema", None)
    if node.op != "call_function" or schema is None or not schema.returns:
        return False
    alias = schema.returns[0].alias_info
    return alias is not None and not alias.is_write


def needs_functionalization(graph) -> bool:
    """True when an in-place op writes to an input or to a tensor that views alias."""
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        for i in written_arguments(node.target):
            if i >= len(node.args) or not hasattr(node.args[i], "op"):
                return True
            mutated = node.args[i]
            if mutated.op == "placeholder" or _is_view(mutated):
                return True
            if any(_is_view(user) for user in mutated.users if user is not node):
                return True
    return False
