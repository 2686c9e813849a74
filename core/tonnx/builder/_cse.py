"""Common subexpression elimination: one node for each distinct (op, inputs, attributes).

Converters work one FX node at a time, so each layer rebuilds what an earlier layer
already computed (the unsqueezed rotary tables, the attention mask). Runtimes without
their own CSE would run every copy; small graphs also load faster.
"""

from __future__ import annotations

from tonnx.builder._passes import _apply_renames

# Ops whose every call must run: two of them never compute the same thing.
_NONDETERMINISTIC = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial"}
)


def eliminate_common_subexpressions(g) -> int:
    """Removes nodes that repeat an earlier node; returns how many were removed."""
    outputs = set(g.outputs)
    seen: dict[tuple, list[str]] = {}
    rename: dict[str, str] = {}
    kept = []
    for node in g.nodes:
        if rename:
            node.inputs = [rename.get(i, i) for i in node.inputs]
        key = _key(node)
        if key is None or any(o in outputs for o in node.outputs):
            kept.append(node)
            continue
        first = seen.get(key)
        if first is None:
            seen[key] = node.outputs
            kept.append(node)
            continue
        for mine, theirs in zip(node.outputs, first):
            if mine:
                rename[mine] = theirs
    if not rename:
        return 0
    removed = len(g.nodes) - len(kept)
    g.nodes = kept
    # names read inside subgraphs (outer-scope reads) follow the renames too
    _apply_renames(g, rename)
    return removed


def _key(node) -> tuple | None:
    if node.op_type in _NONDETERMINISTIC or "" in node.outputs:
        return None
    frozen = []
    if node.attributes:
        for name, value in sorted(node.attributes.items()):
            if isinstance(value, list):
                value = tuple(value)
            try:
                hash(value)
            except TypeError:
                return None  # tensors, subgraphs: not worth comparing
            frozen.append((name, value))
    return (node.domain, node.op_type, tuple(node.inputs), tuple(frozen), len(node.outputs))
