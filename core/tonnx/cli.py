"""The ``tonnx`` command: ``export``, ``demo``, ``show``, ``packs``, ``explain``, ``--version``."""

from __future__ import annotations

import argparse
import sys

from ._cli import add_commands
from ._export import DEFAULT_OPSET


def _packs(args) -> int:
    from tonnx.dispatch._manager import default_manager

    manager = default_manager()
    config = manager.pack_config(_dispatcher())
    enabled = manager.enabled_packs(config)
    print(f"{'pack':<14}{'version':<10}{'priority':>9}{'converters':>11}  {'status':<15}{'distribution':<22}path")
    for name, spec in sorted(manager.specs.items()):
        try:
            count = str(len(manager.converters(name)))
        except Exception as e:  # shown, not raised: this command is how one finds a broken pack
            count = f"FAILED: {e}"
        status = "enabled" if name in enabled else ("fallback (off)" if spec.fallback else "blocked")
        priority = config.priority_of(name, spec.priority)
        origin = manager.origins[name]
        print(
            f"{name:<14}{manager.versions[name]:<10}{priority:>9}{count:>11}  {status:<15}"
            f"{origin.distribution:<22}{origin.path}"
        )
    for name, error in manager.failures.items():
        print(f"{name:<14}{'-':<10}{'-':>9}{'-':>11}  FAILED: {error}")
    return 0


def _dispatcher():
    from tonnx import Dispatcher

    return Dispatcher()


def _explain(args) -> int:
    from tonnx.dispatch._converter import normalize_key
    from tonnx.dispatch._manager import default_manager

    manager = default_manager()
    key = normalize_key(args.op)
    registry = manager.registry(args.opset, _dispatcher())
    candidates = registry.candidates(key)
    if not candidates and "::" in key and "." not in key.partition("::")[2]:
        if registry.candidates(f"{key}.default"):
            print(f"({key} names every overload; showing {key}.default)")
            key = f"{key}.default"
            candidates = registry.candidates(key)
    print(f"{key} at opset {args.opset}:")
    if not candidates:
        overloads = [k for k in registry.keys() if k.startswith(f"{key}.")]
        if overloads:
            print(f"  {key} is an op with overloads; ask for one of: {', '.join(overloads)}")
            return 1
        print("  no converter in the enabled packs")
        hint = manager.disabled_handlers(key, list(registry.packs))
        if hint:
            print(f"  {hint.strip(' -')}")
        return 1
    for i, cand in enumerate(candidates):
        print(f"  {i + 1}. {cand.describe()}")
    tied = registry.ties(key)
    if tied:
        packs = ", ".join(repr(c.pack) for c in tied)
        print(f"CONFLICT: {len(tied)} converters tie (packs {packs}); an export using this op "
              f"fails until one pack gets a higher priority or the others are blocked.")
        return 2
    for pool in (False, True):
        ranked = [c for c in candidates if c.converter.complex == pool]
        if ranked:
            _print_winner(ranked, "winner for complex values" if pool else "winner")
    return 0


def _print_winner(candidates: list, label: str) -> None:
    winner = candidates[0]
    reason = "highest priority"
    if len(candidates) > 1 and candidates[1].priority == winner.priority:
        reason = "same priority, but overload-specific beats packet-level"
    if winner.converter.applies is not None:
        reason += " (subject to its predicate on each node)"
    print(f"{label}: {winner.converter.qualified_name} from pack {winner.pack!r}: {reason}")
    doc = (getattr(winner.converter.function, "__doc__", None) or "").strip()
    if doc:
        print(f"  {doc.splitlines()[0]}")


def _coverage(args) -> int:
    from ._coverage import coverage_report

    text, status = coverage_report(args.tests, args.pack)
    print(text)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tonnx", description="Fast PyTorch to ONNX export.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_commands(parser, sub)  # export, demo, show, --version (tonnx._cli)
    packs = sub.add_parser("packs", help="list installed converter packs")
    packs.set_defaults(run=_packs)
    explain = sub.add_parser("explain", help="show the converters of an op and the winner")
    explain.add_argument("op", help="e.g. aten.add.Tensor or aten::relu.default")
    explain.add_argument("--opset", type=int, default=DEFAULT_OPSET)
    explain.set_defaults(run=_explain)
    coverage = sub.add_parser(
        "coverage", help="per installed pack: the keys it registers and those its tests cover"
    )
    coverage.add_argument(
        "tests", nargs="*", default=["tests"],
        help="test folders or files; a test module lists the keys it checks in a COVERS set",
    )
    coverage.add_argument("--pack", action="append", help="only this pack (repeatable)")
    coverage.set_defaults(run=_coverage)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
