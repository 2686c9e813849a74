"""The dispatch plan: a converter resolved for every FX node before any is converted.

All missing ops are reported at once; a node touching a complex value takes a complex
converter; a graph converter's graph (``expand``) and a slice write's scatter graph are
planned like the program. The plan and its memos live on the interpreter that runs it.
"""

from __future__ import annotations

import operator
from collections import Counter

from torch.fx import Node

from tonnx.pipeline.interpret import _complex
from tonnx.pipeline.interpret._values import complex_values
from tonnx.pipeline.prepare import _mutations, _slice_writes


def make_plan(interp, gm) -> None:
    """Resolves every node's converter; raises once for all ops without one."""
    missing: Counter = Counter()
    interp.complex_refused.clear()
    plan_graph(interp, gm, missing)
    if missing:
        raise interp.on_missing(dict(missing))
    if interp.complex_refused:
        raise _complex.complex_error(interp.complex_refused)


def plan_graph(interp, gm, missing: Counter) -> None:
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if target is operator.getitem or target in interp.symbolic or target in interp.no_ops:
            continue
        if target in interp.higher_order:
            for sub in subgraphs(gm, node):
                plan_graph(interp, sub, missing)
            continue
        chain = _mutations.slice_write(node)
        if chain is not None:
            sub = _slice_writes.scatter_graph(node, chain)
            interp.slice_writes[node] = (sub, chain[0])
            plan_graph(interp, sub, missing)
            continue
        key = interp.key_of(target)
        cand = resolve(interp, key, node)
        if cand is None:
            missing[key] += 1
        elif cand is not False:
            interp.plan[node] = cand
            if hasattr(cand.converter.function, "expand"):
                plan_expansion(interp, node, cand, missing)


def resolve(interp, key: str, node):
    """The node's converter, None when there is none, False when refused for complex.

    A node reading or making a complex value takes a ``complex=True`` converter, or a
    graph converter (complex-transparent: its graph is planned like this one); one that
    only a real converter would convert is recorded in ``complex_refused``.
    """
    registry = interp.registry
    touched = complex_values(node)
    if not touched:
        return registry.resolve(key, node)
    cand = registry.resolve(key, node, complex=True)
    if cand is None:
        cand = registry.resolve(key, node)
        if cand is not None and not hasattr(cand.converter.function, "expand"):
            cand = False
    if cand is False or (cand is not None and _complex.has_complex32(touched)):
        interp.complex_refused[(key, _complex.complex_role(node))] += 1
        return False
    return cand


def plan_expansion(interp, node, cand, missing: Counter) -> None:
    """Plans the FX graph a graph converter lowers ``node`` into, with the other nodes.

    A converter whose function has ``expand(args, kwargs, cache)`` (arguments as
    torch's meta values) converts by emitting that graph (``Interpreter.convert_graph``);
    planning it here reports the ops it reaches without converter with every other missing op.
    """
    args, kwargs = meta_values(node.args), meta_values(node.kwargs)
    try:
        sub = cand.converter.function.expand(args, kwargs, interp.cache)
    except Exception as e:
        raise interp.failure(node, cand, e) from e
    first = not any(s is sub for s in interp.expansions.values())
    interp.expansions[node] = sub
    if first:
        plan_graph(interp, sub, missing)


def subgraphs(gm, node) -> list:
    """The graph modules a higher-order op's arguments name."""
    return [getattr(gm, a.target) for a in node.args if getattr(a, "op", None) == "get_attr"]


def meta_values(arg):
    """``arg`` with each FX node replaced by torch's value of it (FakeTensor, SymInt)."""
    if isinstance(arg, Node):
        return arg.meta.get("val")
    if isinstance(arg, (list, tuple)):
        return type(arg)(meta_values(a) for a in arg)
    if isinstance(arg, dict):
        return {k: meta_values(v) for k, v in arg.items()}
    return arg
