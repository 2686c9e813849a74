"""In-place ops in torch.export's graph: rebound in place when safe, else functionalized.

torch.export's default IR keeps in-place ops (``add_``). When the mutated tensor is a
fresh intermediate with no view aliasing it and the op returns it, the interpreter simply
rebinds the FX node to the op's result; a ``copy_`` into slices of a fresh intermediate
becomes a ``slice_scatter`` of it (:func:`slice_write`); otherwise the program is
functionalized first, so aliasing can never produce a wrong number.
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


def _schema_is(node, name: str, overload: str) -> bool:
    schema = getattr(getattr(node, "target", None), "_schema", None)
    return (
        getattr(node, "op", None) == "call_function"
        and schema is not None
        and schema.name == name
        and schema.overload_name == overload
    )


def _is_slice(node) -> bool:
    return _schema_is(node, "aten::slice", "Tensor")


def _ends_in_write(view) -> bool:
    """``view`` starts a chain of single-user slices that ends in a ``copy_`` into its last
    view, whose result nobody reads."""
    while _is_slice(view) and len(view.users) == 1:
        (user,) = view.users
        if _schema_is(user, "aten::copy_", "") and user.args[0] is view and not user.users:
            return True
        view = user
    return False


def slice_write(node) -> list | None:
    """``[base, view_1, ..., view_k]`` when ``node`` is a ``copy_`` into ``view_k``, a chain
    of ``slice.Tensor`` views of a fresh intermediate ``base`` (``x[..., :d] = y``).

    Every view of ``base`` must be such a chain ending in such a write: no view is read
    after a write could change it, so the write is ``base = slice_scatter(base, ...)``
    and the interpreter rebinds ``base`` (no functionalization, no retrace)."""
    if not _schema_is(node, "aten::copy_", "") or node.users or not _is_slice(node.args[0]):
        return None
    if not hasattr(node.args[1], "meta"):
        return None
    if not _ends_in_write(node.args[0]):
        return None
    chain = [node.args[0]]
    while _is_slice(chain[-1].args[0]):
        chain.append(chain[-1].args[0])
    if any(hasattr(a, "op") for view in chain for a in (*view.args[1:], *view.kwargs.values())):
        return None  # a dynamic bound: the scatter graph would reference the outer graph
    base = chain[-1].args[0]
    if not hasattr(base, "op") or base.op != "call_function" or _is_view(base):
        return None
    if written_arguments(base.target) or any(_is_view(u) and not _ends_in_write(u) for u in base.users):
        return None
    return [base, *reversed(chain)]


def needs_functionalization(graph) -> bool:
    """True when an in-place op writes to an input, to a tensor views alias, or to a
    tensor it does not return while the graph reads that tensor elsewhere (a ``copy_``
    into slices of a fresh tensor, :func:`slice_write`, is converted without).

    The subgraphs of higher-order ops count too: a ``torch.no_grad()`` function becomes a
    ``wrap_with_set_grad_enabled`` subgraph the interpreter inlines, and a write through a
    view there would otherwise be dropped (PEGASUS-X's position embedding)."""
    for node in graph.nodes:
        if node.op == "get_attr" and _subgraph_needs_functionalization(graph, node):
            return True
        if node.op != "call_function" or slice_write(node) is not None:
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


def _subgraph_needs_functionalization(graph, node) -> bool:
    sub = getattr(graph.owning_module, node.target, None) if graph.owning_module is not None else None
    return hasattr(sub, "graph") and needs_functionalization(sub.graph)


def lost_write(node, i: int) -> str:
    """Why rebinding ``node``'s written argument ``i`` would lose the write ("" when it
    would not): the tensor is a view, whose base only functionalization updates. (An input
    written in place is functionalized in the program; in a decomposition's graph the
    graph returns it, so rebinding it is exact.) The interpreter checks it so a missed case
    fails instead of computing wrong numbers."""
    mutated = node.args[i] if i < len(node.args) else None
    if not hasattr(mutated, "op") or not _is_view(mutated):
        return ""
    return (
        f"writes into the view {mutated.name!r}, which the program was not functionalized "
        f"for: a tonnx bug (tonnx.pipeline.prepare._mutations.needs_functionalization missed it); "
        f"please report it with the model"
    )
