"""In-place ops in torch.export's graph: rebound in place when safe, else functionalized.

torch.export's default IR keeps in-place ops (``add_``). When the mutated tensor is a
fresh intermediate with no view aliasing it and the op returns it, the interpreter simply
rebinds the FX node to the op's result; otherwise the program is functionalized first, so
aliasing can never produce a wrong number.
"""

from __future__ import annotations

#: views whose schema marks their input written (``prims::as_strided(Tensor(a!) a, ...)``)
#: although they write nothing: not rebound, not a reason to functionalize
_VIEWS_MARKED_WRITTEN = frozenset({"prims::as_strided"})


def written_arguments(target) -> tuple[tuple[int, int | None], ...]:
    """(argument position, position of the result aliasing it or None) for each argument
    an op overload writes to; empty for functional ops."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.is_mutable or schema.name in _VIEWS_MARKED_WRITTEN:
        return ()
    found = []
    for i, arg in enumerate(schema.arguments):
        alias = arg.alias_info
        if alias is None or not alias.is_write:
            continue
        returned = None
        for j, ret in enumerate(schema.returns):
            if ret.alias_info is not None and ret.alias_info.before_set == alias.before_set:
                returned = j
                break
        found.append((i, returned))
    return tuple(found)


def _is_view(node) -> bool:
    schema = getattr(node.target, "_schema", None)
    if node.op != "call_function" or schema is None or not schema.returns:
        return False
    alias = schema.returns[0].alias_info
    return alias is not None and (not alias.is_write or schema.name in _VIEWS_MARKED_WRITTEN)


def needs_functionalization(graph) -> bool:
    """True when an in-place op writes to an input, to a tensor views alias, or to a
    tensor it does not return while the graph reads that tensor elsewhere."""
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        for i, returned in written_arguments(node.target):
            if i >= len(node.args) or not hasattr(node.args[i], "op"):
                return True
            mutated = node.args[i]
            if mutated.op == "placeholder" or _is_view(mutated):
                return True
            others = [user for user in mutated.users if user is not node]
            if any(_is_view(user) for user in others) or (returned is None and others):
                return True
    return False
