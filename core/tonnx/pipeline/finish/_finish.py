"""Step 4, finish: the converted graph checked, optimized, rewritten by the packs' rules, and
stamped with the metadata that says how it was made."""

from __future__ import annotations

import warnings
from collections import Counter

from tonnx.builder._reduce_axes import count_reduction_axes_from_front


def finish_graph(g, ep, interpreter, registry, config, manager, *, optimize: bool, validate: bool, record=None) -> None:
    """Validation, the builder's passes, pack rewrites and metadata, in that order."""
    if validate:
        from tonnx.pipeline.finish._validate import validate as validate_graph

        validate_graph(g)
    if record is not None:
        record.start("optimize")
    if optimize:
        g.optimize()
        apply_pack_rewrites(g, registry, config)
        g.derive_weight_transposes()  # after the rewrites, which read MatMul(x, Transpose(W))
    # not an optimization: onnxruntime 1.31.1 reduces empty tensors wrong over negative axes
    if count_reduction_axes_from_front(g) and optimize:
        g.remove_unused()  # the negative axes' constants
    drop_unused_domains(g)
    stamp_metadata(g, ep, interpreter, registry, manager)


def stamp_metadata(g, ep, interpreter, registry, manager) -> None:
    """The packs used, what a fallback pack converted (also warned), the range constraints."""
    from tonnx.pipeline.finish._metadata import graph_metadata

    g.metadata_props["pkg.tonnx.packs"] = ", ".join(
        f"{n} {manager.versions.get(n, '')}".strip() for n in registry.packs if registry.packs[n]
    )
    if interpreter.fallback_ops:
        summary = ", ".join(f"{k} x{v}" for k, v in sorted(interpreter.fallback_ops.items()))
        g.metadata_props["pkg.tonnx.fallback_ops"] = summary
        # one warning per export: what a fallback pack converted is never silent
        warnings.warn(
            f"tonnx: {len(interpreter.fallback_ops)} op(s) converted by a fallback pack "
            f"(listed in the model's pkg.tonnx.fallback_ops metadata): {summary}",
            UserWarning,
            stacklevel=4,
        )
    g.metadata_props["pkg.torch.export.ExportedProgram.range_constraints"] = str(
        ep.range_constraints
    )
    g.metadata_props.update(graph_metadata(ep, interpreter, manager, g))


def apply_pack_rewrites(g, registry, config) -> None:
    """Packs' multi-node rewrites (``PackSpec.rewrites``), run on the optimized graph,
    where patterns are canonical (identities gone, constants folded, shared subexpressions
    merged), then the two passes that clean up after them. Rules that fired are listed in
    the model's ``pkg.tonnx.rewrites`` metadata."""
    from tonnx.builder._rewrites import apply_rewrites
    from tonnx.dispatch._rewrite_table import enabled_rules

    rules = enabled_rules(registry, config)
    if not rules:
        return
    fired = Counter()
    for stage in sorted({rule.stage for _, rule in rules}):
        staged = [(pack, rule) for pack, rule in rules if rule.stage == stage]
        for graph in (g, *g.functions.values()):  # local functions' bodies are rewritten too
            fired_here = apply_rewrites(graph, staged)
            if fired_here:
                graph.remove_identity_nodes()  # rules alias a result through Identity
                graph.eliminate_common_subexpressions()
                graph.remove_unused()
                fired.update(fired_here)
    if fired:
        g.metadata_props["pkg.tonnx.rewrites"] = ", ".join(f"{k} x{v}" for k, v in sorted(fired.items()))


def drop_unused_domains(g) -> None:
    """Domains no node uses, and local functions no node calls any more, are dropped."""
    called: set[tuple[str, str]] = set()
    used = _domains_used(g, set(), called)
    pending = list(called)
    while pending:
        body = g.functions.get(pending.pop())
        if body is not None:
            before = set(called)
            _domains_used(body, used, called)
            pending.extend(called - before)
    for key in [k for k in g.functions if k not in called]:
        del g.functions[key]
    for domain in [d for d in g.opsets if d and d not in used]:
        del g.opsets[domain]


def _domains_used(g, used: set[str], called: set[tuple[str, str]]) -> set[str]:
    """Domains of the nodes of ``g`` and of its subgraphs (a Loop body's, an If branch's);
    the local functions they call are added to ``called``."""
    functions = g.functions
    for node in g.nodes:
        used.add(node.domain)
        if (node.domain, node.op_type) in functions:
            called.add((node.domain, node.op_type))
        for sub in node.subgraphs():
            _domains_used(sub, used, called)
    return used
