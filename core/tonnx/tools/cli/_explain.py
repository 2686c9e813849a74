"""``tonnx explain OP``: the converters of an op, in the order tried, and the winner.

OP is what people type: ``aten::add.Tensor``, ``aten.add.Tensor``,
``torch.ops.aten.add.Tensor``, ``aten::add`` (every overload), ``torch.add`` or
``torch.nn.functional.scaled_dot_product_attention`` (the ATen op of that name),
``scaled_dot_product_attention``. A name that is no op is said to be one, with the
closest op names when there are some.
"""

from __future__ import annotations

import difflib
import sys

from tonnx._opsets import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, SUPPORTED_OPSETS
from tonnx.tools.cli import _codes

#: Python spellings -> the prefix of the ATen op's name (torch.special.i1e -> aten::special_i1e)
_PY_PREFIXES = {"torch.nn.functional.": "", "torch.special.": "special_", "torch.linalg.": "linalg_",
                "torch.fft.": "fft_", "torch.Tensor.": "", "F.": "", "torch.": ""}


class UnknownOpError(Exception):
    """OP names no torch op and no converter key (exit code 2)."""


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="show the converters of an op and the winner")
    p.add_argument("op", help="e.g. aten::add.Tensor, aten.relu.default, torch.add, "
                              "scaled_dot_product_attention")
    p.add_argument("--opset", type=int, default=DEFAULT_OPSET, choices=SUPPORTED_OPSETS, metavar="N",
                   help=f"main-domain opset, {MIN_OPSET} to {MAX_OPSET} (default {DEFAULT_OPSET}), as for export")
    p.add_argument("--target-runtime", action="append", default=[], metavar="RUNTIME=VERSION",
                   help="the runtime that will run the model, e.g. onnxruntime=1.31.1, for packs "
                        "whose converters depend on it (default: their own, e.g. the installed one)")
    p.set_defaults(run=run)


def _op_names() -> list[str]:
    import torch

    return list(torch._C._dispatch_get_all_op_names())


def _packets(names: list[str]) -> set[str]:
    return {n.partition(".")[0] for n in names}


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(word, sorted(choices), n=3, cutoff=0.75)
    return f" Did you mean {' or '.join(close)}?" if close else ""


def _suggest_op(packet: str, packets: set[str]) -> str:
    """Close op names of the same namespace, compared without the namespace."""
    ns, _, name = packet.rpartition("::")
    ns = ns or "aten"
    bare = {p.partition("::")[2]: p for p in packets if p.startswith(f"{ns}::")}
    close = difflib.get_close_matches(name, sorted(bare), n=3, cutoff=0.8)
    return f" Did you mean {' or '.join(bare[c] for c in close)}?" if close else ""


def resolve(text: str, registry) -> tuple[str, str]:
    """(the converter key for ``text``, a note saying how it was read, or "")."""
    from tonnx.dispatch._converter import normalize_key

    key = normalize_key(text)
    if registry.candidates(key):
        return key, ""
    names = _op_names()
    known = set(names) | {f"{n}.default" for n in names if "." not in n.partition("::")[2]}
    packets = _packets(names)
    if "::" in key:
        packet, dot, overload = key.partition(".")
        if not dot or key in known:
            if packet in packets:
                return key, ""
            raise UnknownOpError(f"{text!r}: there is no op {packet} in this torch.{_suggest_op(packet, packets)}")
        if packet in packets:
            overloads = sorted(n for n in known if n.startswith(f"{packet}."))
            raise UnknownOpError(
                f"{text!r}: {packet} has no overload {overload!r}.{_suggest(key, overloads)} "
                f"Its overloads: {', '.join(o.partition('.')[2] for o in overloads)}."
            )
        raise UnknownOpError(f"{text!r}: there is no op {packet} in this torch.{_suggest_op(packet, packets)}")
    name, aten_prefix = key, ""
    for prefix, aten_prefix in _PY_PREFIXES.items():
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    else:
        aten_prefix = ""
    for op in (f"aten::{aten_prefix}{name}", f"aten::{name}"):
        if name.isidentifier() and op in packets:
            return op, f"({text} is read as the ATen op {op})"
    raise UnknownOpError(
        f"{text!r} is not an op of this torch nor a key of an enabled pack."
        f"{_suggest_op(f'aten::{aten_prefix}{name}', packets)} "
        f"Spell an op as aten::add.Tensor, aten.add.Tensor or torch.add."
    )


def run(args) -> int:
    from tonnx import Dispatcher
    from tonnx.dispatch._manager import diagnostic_manager, lenient
    from tonnx.tools.cli._packs import failure_lines

    manager = diagnostic_manager()
    with lenient(manager):
        registry = manager.registry(args.opset, Dispatcher(target_runtime=_runtimes(args.target_runtime)))
    for line in failure_lines(manager):
        print(f"note: {line.strip()}", file=sys.stderr)
    try:
        key, note = resolve(args.op, registry)
    except UnknownOpError as e:
        print(f"tonnx explain: {e}", file=sys.stderr)
        return _codes.USAGE
    if note:
        print(note)
    return _explain(manager, registry, key, args.opset)


def _runtimes(items: list[str]) -> dict[str, str]:
    """``["onnxruntime=1.31.1"]`` -> ``{"onnxruntime": "1.31.1"}``."""
    found = {}
    for item in items:
        runtime, sep, version = item.partition("=")
        if not sep or not runtime.strip() or not version.strip():
            raise SystemExit(f"tonnx explain: --target-runtime {item!r}: give RUNTIME=VERSION, e.g. onnxruntime=1.31.1")
        found[runtime.strip()] = version.strip()
    return found


def _explain(manager, registry, key: str, opset: int) -> int:
    from tonnx.dispatch._key_check import check_op_key

    candidates = registry.candidates(key)
    packet = not candidates and "." not in key.partition("::")[2]
    if packet and (registry.candidates(f"{key}.default") or (
            not any(k.startswith(f"{key}.") for k in registry.keys())
            and check_op_key(f"{key}.default") is None)):
        print(f"({key} names every overload; showing {key}.default)")
        key = f"{key}.default"
        candidates = registry.candidates(key)
    print(f"{key} at opset {opset}:")
    if not candidates:
        overloads = sorted(k for k in registry.keys() if k.startswith(f"{key}."))
        if overloads:
            print(f"  {key} has {len(overloads)} overload(s) with converters; "
                  f"`tonnx explain OVERLOAD` details one:")
            for overload in overloads:
                winner = registry.candidates(overload)[0]
                print(f"  {overload}: {winner.converter.qualified_name} from pack {winner.pack!r}")
            return _codes.OK
        print("  no converter in the enabled packs")
        hint = manager.disabled_handlers(key, list(registry.packs))
        if hint:
            print(f"  {hint.strip(' -')}")
        return _codes.FAILED
    for i, cand in enumerate(candidates):
        print(f"  {i + 1}. {cand.describe()}")
    tied = registry.ties(key)
    if tied:
        packs = ", ".join(repr(c.pack) for c in tied)
        print(f"CONFLICT: {len(tied)} converters tie (packs {packs}); an export using this op "
              f"fails until one pack gets a higher priority or the others are blocked.")
        return _codes.USAGE
    for pool in (False, True):
        ranked = [c for c in candidates if c.converter.complex == pool]
        if ranked:
            _print_winner(ranked, "winner for complex values" if pool else "winner")
    return _codes.OK


def _print_winner(candidates: list, label: str) -> None:
    winner = candidates[0]
    reason = "highest priority"
    if len(candidates) > 1 and candidates[1].priority == winner.priority:
        reason = "same priority, but overload-specific beats packet-level"
    applies = winner.converter.applies
    if applies is not None:
        reason += " (subject to its predicate on each node)"
    print(f"{label}: {winner.converter.qualified_name} from pack {winner.pack!r}: {reason}")
    condition = (getattr(applies, "__doc__", None) or "").strip()
    if condition:  # what the pack chose (for the target runtime, say)
        print(f"  applies: {condition.splitlines()[0]}")
    doc = (getattr(winner.converter.function, "__doc__", None) or "").strip()
    if doc:
        print(f"  {doc.splitlines()[0]}")
