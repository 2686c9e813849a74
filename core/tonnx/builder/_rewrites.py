"""Packs' graph rewrite rules, applied in one sweep over the converted graph.

A converter sees one FX node; what a runtime fuses is often several (RMSNorm written as
pow/mean/add/rsqrt/mul, rotary embeddings as slice/neg/cat/mul/add). A pack hands such
patterns to tonnx as :class:`RewriteRule` records (``PackSpec.rewrites``). Each rule is
anchored on the op type of the pattern's *last* node; the sweep visits every node once, in
order, and offers it to the rules anchored on its type, highest pack priority first: the
first rule that returns replacement nodes wins. Replacement nodes are offered to the rules
in turn (a fused norm may absorb the Add before it), and nodes left without reader die
on the spot, so reader counts stay exact and a pattern fires only on what it fully owns.
The sweep is linear in the graph size: rules only look at the anchor's producers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tonnx._errors import TonnxError
from tonnx.builder._node import Node
from tonnx.builder._passes import _all_reads

#: Rewrites allowed on one node and its replacements (a rule re-creating its own
#: anchor would otherwise loop forever).
_MAX_CHAIN = 16


@dataclass(frozen=True)
class RewriteRule:
    """One rewrite: ``apply(ctx, node)`` returns the nodes replacing ``node``, or None.

    ``node`` is a node of type ``op_type`` (in ``domain``); the replacement nodes, made
    with ``ctx.node(...)``, must produce every output of ``node`` that is read. A rule
    returns None when the pattern does not match exactly: a rewrite never approximates.
    ``priority`` overrides the pack's priority for this rule only, as a converter's does
    (a user's re-prioritisation of the pack shifts it by the same amount). ``stage``
    orders sweeps: every rule of stage 0 (fusions) has run over the whole graph before a
    rule of stage 1 (lowerings such as weight quantization, which must see the fused
    projections) sees it.
    """

    name: str
    op_type: str
    apply: Callable[[RewriteContext, Any], Sequence[Any] | None]
    domain: str = ""
    priority: int | None = None
    stage: int = 0


class RewriteContext:
    """What a rule may read and create while the sweep runs."""

    def __init__(self, g):
        #: the GraphBuilder: types, shapes, constants, ``make_initializer``
        self.g = g
        self._producer = {o: n for n in g.nodes for o in n.outputs if o}
        # optimize() removed unused constants: small ones must not be shared by name again
        small = g._small_constants
        for key in [k for k, name in small.items() if name not in g.constants]:
            del small[key]
        self._readers = Counter(_all_reads(g))
        self._readers.update(g.outputs)
        #: id -> node of the nodes removed (the node is kept so that its id is not reused)
        self._dead: dict[int, Node] = {}
        #: nodes already swept (final order) and their positions
        self._swept: list[Node] = []
        self._position: dict[int, int] = {}
        self._taken: list[str] = []
        #: the node the rules are looking at
        self._anchor: Node | None = None

    def producer(self, name: str) -> Node | None:
        """The live node computing ``name``; None for inputs, constants and outer names."""
        node = self._producer.get(name)
        return None if node is None or id(node) in self._dead else node

    def readers(self, name: str) -> int:
        """How many live node inputs (and graph outputs) read ``name``."""
        return self._readers[name]

    def is_output(self, name: str) -> bool:
        return name in self.g.outputs

    def node(
        self,
        op_type: str,
        inputs: Sequence[str],
        outputs: int | Sequence[str] = 1,
        *,
        domain: str = "",
        **attributes: Any,
    ) -> Node:
        """A new node (not yet in the graph); an int ``outputs`` makes fresh names.

        The type of a fresh output is inferred for standard ops; for a custom domain the
        rule sets it with ``ctx.g.set_type`` (and ``set_shape`` when it knows it).
        """
        g = self.g
        if domain and domain not in g.opsets:
            raise TonnxError(f"Rewrite creates {domain}.{op_type} but domain {domain!r} has no version.")
        if isinstance(outputs, int):
            names = [g._claim(g.unique_name(op_type.lower())) for _ in range(outputs)]
        else:
            names = [g._claim(o) if o and not g.has_name(o) else o for o in outputs]
        inputs = list(inputs)
        while inputs and not inputs[-1]:
            inputs.pop()
        node = Node(op_type, inputs, names, attributes, domain, g._unique_node_name(op_type), None)
        if not domain:
            from tonnx.builder._type_inference import infer_types

            infer_types(g, node)
        return node

    def take_over(self, *old: Node, replacement: Sequence[Node] = ()) -> bool:
        """Lets the replacement nodes compute the outputs of ``old`` (same names) too.

        For a fusion that absorbs earlier nodes whose results are also read elsewhere
        (the residual Add a skip-norm also returns, the key and value caches a fused
        attention returns). The replacement is placed where the anchor is, so a node
        already placed between an ``old`` node and the anchor must not read its outputs:
        False, and nothing changes, when one does and stays alive. Given ``replacement``
        (the nodes the rule is about to return), the nodes that die with the anchor (the
        pattern's own intermediates, read by nothing else) do not count. Several nodes are
        taken over together or not at all. Call it last, when the rule is sure to return
        its replacement.
        """
        positions = [self._position.get(id(n)) for n in old]
        if None in positions or any(id(n) in self._dead for n in old):
            return False
        taken = [*self._taken, *(i for n in old for i in n.inputs)]
        dying = self._dying(replacement, taken) if replacement else set()
        for node, pos in zip(old, positions):
            outs = {o for o in node.outputs if o}
            for reader in self._swept[pos + 1 :]:
                if id(reader) not in self._dead and id(reader) not in dying and outs.intersection(reader.inputs):
                    return False
        for node in old:
            self._dead[id(node)] = node
        self._taken[:] = taken  # released once the replacement's reads are counted
        return True

    def _dying(self, replacement: Sequence[Node], taken: Sequence[str]) -> set[int]:
        """Ids of the live nodes that die when the anchor gives way to ``replacement``
        (``taken``: inputs of the nodes taken over, released too): ``_release`` run on
        a copy of the reader counts."""
        delta: Counter = Counter()
        for node in replacement:
            delta.update(node.inputs)
        dying: set[int] = set()
        stack = [*self._anchor.inputs, *taken]
        while stack:
            name = stack.pop()
            delta[name] -= 1
            if self._readers[name] + delta[name] > 0:
                continue
            node = self._producer.get(name)
            if node is None or id(node) in self._dead or id(node) in dying or node.subgraphs():
                continue
            if all(self._readers[o] + delta[o] <= 0 for o in node.outputs if o):
                dying.add(id(node))
                stack.extend(node.inputs)
        return dying

    # -- bookkeeping of the sweep -------------------------------------------------------------

    def _replace(self, old: Node, new: Sequence[Node]) -> None:
        for node in new:
            for o in node.outputs:
                if o:
                    self._producer[o] = node
            self._readers.update(node.inputs)
        self._dead[id(old)] = old
        self._release([*old.inputs, *self._taken])
        self._taken.clear()

    def _release(self, names: Sequence[str]) -> None:
        """Drops reads; producers left without reader die, transitively."""
        stack = list(names)
        while stack:
            name = stack.pop()
            self._readers[name] -= 1
            if self._readers[name] > 0:
                continue
            node = self._producer.get(name)
            if node is None or id(node) in self._dead or node.subgraphs():
                continue
            if all(self._readers[o] <= 0 for o in node.outputs if o):
                self._dead[id(node)] = node
                stack.extend(node.inputs)


def apply_rewrites(g, rules: Sequence[tuple[str, RewriteRule]]) -> Counter:
    """Applies ``(pack, rule)`` pairs, given best first; returns ``{pack:rule: times}``."""
    anchored: dict[tuple[str, str], list[tuple[str, RewriteRule]]] = {}
    for pack, rule in rules:
        anchored.setdefault((rule.domain, rule.op_type), []).append((pack, rule))
    fired: Counter = Counter()
    if not anchored:
        return fired
    ctx = RewriteContext(g)
    for node in g.nodes:
        _offer(ctx, node, anchored, fired, 0)
    g.nodes = [n for n in ctx._swept if id(n) not in ctx._dead]
    return fired


def _offer(ctx, node, anchored, fired: Counter, depth: int) -> None:
    """Offers ``node`` to its rules; the winner's replacements are offered in turn."""
    if id(node) in ctx._dead:
        return
    for pack, rule in anchored.get((node.domain, node.op_type), ()):
        ctx._anchor = node
        new = rule.apply(ctx, node)
        if new is None:
            continue
        if depth >= _MAX_CHAIN:
            raise TonnxError(
                f"Rewrite rule {pack}:{rule.name} fired {_MAX_CHAIN} times in a chain on "
                f"{node!r}: it re-creates a pattern it matches; make it return None there."
            )
        _check_outputs(ctx, pack, rule, node, new)
        label = f"{pack}:{rule.name}"
        metadata = {**(node.metadata or {}), "pkg.tonnx.converter": label}
        for n in new:
            n.metadata = metadata
        ctx._replace(node, new)
        fired[label] += 1
        for n in new:
            _offer(ctx, n, anchored, fired, depth + 1)
        return
    ctx._position[id(node)] = len(ctx._swept)
    ctx._swept.append(node)


def _check_outputs(ctx, pack: str, rule: RewriteRule, old: Node, new: Sequence[Node]) -> None:
    made = {o for n in new for o in n.outputs}
    lost = [o for o in old.outputs if o and o not in made and ctx.readers(o) > 0]
    if lost:
        raise TonnxError(
            f"Rewrite rule {pack}:{rule.name} replaced {old!r} but nothing computes {lost} "
            f"any more; its replacement nodes must produce every output that is read."
        )
