"""The rewrite rules of the enabled packs, ordered as converters are: by priority (the
pack's, or the rule's own shifted with the pack's).

``PackSpec.rewrites`` is loaded when an export needs it (a blocked pack's never is), the
whole table is checked before any rule runs, and rules of two packs anchored on the same
op type at equal priority are a conflict, as two converters would be.
"""

from __future__ import annotations

from tonnx._errors import ConverterConflictError, PackLoadError
from tonnx.builder._rewrites import RewriteRule


def enabled_rules(registry, config) -> list[tuple[str, RewriteRule]]:
    """``(pack, rule)`` pairs of the registry's enabled packs, best first (a pack's rules
    of equal priority in the order it gives them)."""
    ranked = []
    for name, spec in registry.packs.items():
        if spec is None or spec.rewrites is None:
            continue
        priority = config.priority_of(name, spec.priority)
        for rule in _load(name, spec):
            shift = priority - spec.priority
            shifted = priority if rule.priority is None else rule.priority + shift
            ranked.append((shifted, name, rule))
    ranked.sort(key=lambda item: item[0], reverse=True)
    _check_ties(ranked)
    return [(name, rule) for _, name, rule in ranked]


def _load(name: str, spec) -> tuple[RewriteRule, ...]:
    try:
        rules = tuple(spec.rewrites())
    except Exception as e:
        raise PackLoadError(f"Pack {name!r} failed to load its rewrite rules: {type(e).__name__}: {e}") from e
    for rule in rules:
        if not isinstance(rule, RewriteRule) or not callable(rule.apply):
            raise PackLoadError(
                f"Pack {name!r}: rewrites() returned {rule!r}, expected "
                f"tonnx.converters.RewriteRule records with a callable apply."
            )
        if rule.priority is not None and type(rule.priority) is not int:
            raise PackLoadError(
                f"Pack {name!r}: rewrite rule {rule.name!r} has priority {rule.priority!r}; "
                f"give an int or None."
            )
    return rules


def _check_ties(ranked) -> None:
    owner: dict[tuple[int, str, str], tuple[str, str]] = {}
    for priority, name, rule in ranked:
        key = (priority, rule.domain, rule.op_type)
        other = owner.setdefault(key, (name, rule.name))
        if other[0] != name:
            raise ConverterConflictError(
                f"Rewrite rules {other[0]}:{other[1]} and {name}:{rule.name} both anchor on "
                f"{rule.domain or 'ai.onnx'}.{rule.op_type} at priority {priority}. Fix: give "
                f"one pack a higher priority (packs=['{name}=<n>']) or block one "
                f"(packs=['no:{name}'])."
            )
