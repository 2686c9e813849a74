"""Registry: the converters of the enabled packs for one opset, ordered by the rules.

Priority rules, in order (docs/architecture.md):

1. converters given at the call site (``Dispatcher(converters=...)``) win;
2. then regular packs by numeric priority, highest first (pack default, user override);
3. an overload-specific converter beats a packet-level one of the same priority;
4. fallback packs come last, in the order the dispatcher names them;
5. converters that tie on all of the above raise ConverterConflictError naming every one
   of them, when a node of the graph uses the op (a tie on an op the model never calls
   does not stop its export).

A node that reads or makes a complex value is resolved among the converters registered
with ``complex=True`` only, any other node among the others: the two are separate pools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tonnx._errors import ConverterConflictError
from tonnx.dispatch._converter import Converter, packet_key

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
    #: position of a fallback pack in the dispatcher's chain (0 is tried first)
    chain_position: int = 0

    @property
    def rank(self) -> tuple:
        if self.fallback:
            return (0, -self.chain_position, self.priority, 1 if self.specific else 0)
        return (1, 0, self.priority, 1 if self.specific else 0)

    def describe(self) -> str:
        conv = self.converter
        extra = f", opsets {conv.opsets[0]}..{conv.opsets[1]}" if conv.opsets[0] > 1 or conv.opsets[1] < 10_000 else ""
        pred = ", predicate" if conv.applies is not None else ""
        pred += ", complex" if conv.complex else ""
        level = "overload" if self.specific else "packet"
        chain = f", fallback #{self.chain_position + 1}" if self.fallback else ""
        return (
            f"{conv.qualified_name} [pack {self.pack!r}, priority {self.priority}, "
            f"{level}{extra}{pred}{chain}]"
        )


def functional_key(key: str) -> str | None:
    """``aten::relu.default`` for the in-place ``aten::relu_.default`` when torch has that
    functional overload with the same arguments; None otherwise."""
    ns, sep, rest = key.partition("::")
    name, dot, overload = rest.partition(".")
    if not sep or not dot or not name.endswith("_") or name.endswith("__"):
        return None
    import torch

    def schema(op: str):
        packet = getattr(getattr(torch.ops, ns, None), op, None)
        if packet is None or overload not in packet.overloads():
            return None
        return getattr(packet, overload)._schema

    inplace, functional = schema(name), schema(name[:-1])
    if inplace is None or functional is None or not inplace.is_mutable or functional.is_mutable:
        return None
    names = [(a.name, str(a.type)) for a in inplace.arguments]
    if names != [(a.name, str(a.type)) for a in functional.arguments]:
        return None
    return f"{ns}::{name[:-1]}.{overload}"


def _conflict(tied: list[Candidate], key: str, where: str) -> ConverterConflictError:
    packs = sorted({c.pack for c in tied})
    listing = "\n".join(f"  {c.describe()}" for c in tied)
    keep = packs[0]
    blocks = ", ".join(f"'no:{p}'" for p in packs[1:]) or f"'no:{keep}'"
    return ConverterConflictError(
        f"{len(tied)} converters tie for {key!r} {where}:\n{listing}\n"
        f"Fix: give the pack you want a higher priority (Dispatcher(packs=['{keep}=<n>']) or "
        f"TONNX_PACKS='{keep}=<n>'), block the others (packs=[{blocks}]), or register the "
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
        for cands in by_key.values():
            cands.sort(key=lambda c: c.rank, reverse=True)
        self._by_key = by_key
        #: the dispatcher's extra packs (enabled or not), for the not-found hints
        self.extra_specs: dict[str, Any] = {}
        self._ordered: dict[str, tuple[Candidate, ...]] = {}

    def candidates(self, key: str) -> tuple[Candidate, ...]:
        """Candidates for an overload key (its packet's converters merged), best first.

        An in-place overload (``aten::relu_.default``) the dispatcher's converters do not
        name takes theirs for its functional form (``aten::relu.default``): the
        interpreter rebinds the written tensor to the result, so one converter is exact
        for both, as the packs register it.
        """
        found = self._ordered.get(key)
        if found is None:
            merged = self._for_key(key)
            if not any(c.pack == INHOUSE_PACK for c in merged):
                functional = functional_key(key)
                if functional is not None:
                    merged.extend(c for c in self._for_key(functional) if c.pack == INHOUSE_PACK)
            merged.sort(key=lambda c: c.rank, reverse=True)
            found = tuple(merged)
            self._ordered[key] = found
        return found

    def _for_key(self, key: str) -> list[Candidate]:
        merged = list(self._by_key.get(key, ()))
        packet = packet_key(key)
        if packet is not None:
            merged.extend(self._by_key.get(packet, ()))
        return merged

    def resolve(self, key: str, node: Any, *, complex: bool = False) -> Candidate | None:
        """The winning candidate for ``node`` (predicates evaluated), None if none applies.

        ``complex``: the node reads or makes a complex value; only the converters
        registered with ``complex=True`` are candidates then, and only the others otherwise.
        """
        cands = [c for c in self.candidates(key) if c.converter.complex == complex]
        for i, cand in enumerate(cands):
            applies = cand.converter.applies
            if applies is not None and not applies(node):
                continue
            tied = [cand]
            for other in cands[i + 1 :]:
                if other.rank != cand.rank:
                    break
                if other.converter.applies is None or other.converter.applies(node):
                    tied.append(other)
            if len(tied) > 1:
                raise _conflict(tied, key, f"on FX node {getattr(node, 'name', node)!r}")
            return cand
        return None

    def ties(self, key: str) -> list[Candidate]:
        """Candidates tied with the best one for ``key`` (empty when it wins alone).

        Complex converters and the others are separate pools (``resolve``).
        """
        for pool in (False, True):
            cands = [c for c in self.candidates(key) if c.converter.complex == pool]
            tied = [c for c in cands if c.rank == cands[0].rank]
            if len(tied) > 1:
                return tied
        return []

    def keys(self) -> list[str]:
        return sorted(self._by_key)
