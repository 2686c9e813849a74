"""Registry: the converters of the enabled packs for one opset, ordered by the rules.

Priority rules, in order (docs/architecture.md):

1. converters given at the call site (``Dispatcher(converters=...)``) win;
2. then packs by numeric priority, highest first (pack default, user override);
3. an overload-specific converter beats a packet-level one of the same priority;
4. two converters that tie on priority and specificity raise ConverterConflictError,
   when the registry is built if neither has a predicate, else when both apply to a node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._errors import ConverterConflictError
from ._converter import Converter, packet_key

#: Priority of the converters a Dispatcher is given (rule 1).
INHOUSE_PRIORITY = 1_000_000
INHOUSE_PACK = "<dispatcher>"


@dataclass(frozen=True)
class Candidate:
    """A converter as a candidate for one op, with what decides its rank."""

    priority: int
    specific: bool
    pack: str
    converter: Converter
    fallback: bool = False

    @property
    def rank(self) -> tuple[int, int]:
        return (self.priority, 1 if self.specific else 0)

    def describe(self) -> str:
        conv = self.converter
        extra = f", opsets {conv.opsets[0]}..{conv.opsets[1]}" if conv.opsets[0] > 1 or conv.opsets[1] < 10_000 else ""
        pred = ", predicate" if conv.applies is not None else ""
        level = "overload" if self.specific else "packet"
        return (
            f"{conv.qualified_name} [pack {self.pack!r}, priority {self.priority}, "
            f"{level}{extra}{pred}]"
        )


def _conflict(a: Candidate, b: Candidate, key: str, when: str) -> ConverterConflictError:
    return ConverterConflictError(
        f"Two converters tie for {key!r} {when}:\n  {a.describe()}\n  {b.describe()}\n"
        f"Fix: give one pack a higher priority (Dispatcher(packs=['{a.pack}=<n>']) or "
        f"TONNX_PACKS='{a.pack}=<n>'), block one (packs=['no:{b.pack}']), or register the "
        f"converter you want at the call site with Dispatcher(converters=...)."
    )


class Registry:
    """Resolved once per (enabled packs, opset); looking an op up is a dict access."""

    def __init__(self, candidates: list[Candidate], opset: int, packs: dict[str, Any]):
        self.opset = opset
        #: enabled pack name -> PackSpec (or None for the dispatcher's own converters)
        self.packs = packs
        by_key: dict[str, list[Candidate]] = {}
        for cand in candidates:
            by_key.setdefault(cand.converter.key, []).append(cand)
        for key, cands in by_key.items():
            cands.sort(key=lambda c: c.rank, reverse=True)
            for a, b in zip(cands, cands[1:]):
                if a.rank == b.rank and a.converter.applies is None and b.converter.applies is None:
                    raise _conflict(a, b, key, "when the registry is built")
        self._by_key = by_key
        self._ordered: dict[str, tuple[Candidate, ...]] = {}

    def candidates(self, key: str) -> tuple[Candidate, ...]:
        """Candidates for an overload key (its packet's converters merged), best first."""
        found = self._ordered.get(key)
        if found is None:
            merged = list(self._by_key.get(key, ()))
            packet = packet_key(key)
            if packet is not None:
                merged.extend(self._by_key.get(packet, ()))
                merged.sort(key=lambda c: c.rank, reverse=True)
            found = tuple(merged)
            self._ordered[key] = found
        return found

    def resolve(self, key: str, node: Any) -> Candidate | None:
        """The winning candidate for ``node`` (predicates evaluated), None if none applies."""
        cands = self.candidates(key)
        for i, cand in enumerate(cands):
            applies = cand.converter.applies
            if applies is not None and not applies(node):
                continue
            for other in cands[i + 1 :]:
                if other.rank != cand.rank:
                    break
                if other.converter.applies is None or other.converter.applies(node):
                    raise _conflict(cand, other, key, f"on node {getattr(node, 'name', node)!r}")
            return cand
        return None

    def keys(self) -> list[str]:
        return sorted(self._by_key)
