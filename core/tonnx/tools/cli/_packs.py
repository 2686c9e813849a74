"""``tonnx packs``: every installed pack, its version, priority, status and origin.

A broken pack is how one comes to run this command: it is listed (name, distribution,
the error, how to block it) and the others are listed too; the exit code is 1 then.
"""

from __future__ import annotations

from tonnx.tools.cli import _codes

HEADER = f"{'pack':<14}{'version':<10}{'priority':>9}{'converters':>11}  {'status':<15}{'distribution':<22}path"


def add_parser(sub) -> None:
    p = sub.add_parser("packs", help="list installed converter packs (and those that failed to load)")
    p.set_defaults(run=run)


def run(args) -> int:
    from tonnx import Dispatcher
    from tonnx.dispatch._manager import diagnostic_manager, lenient

    manager = diagnostic_manager()
    config = manager.pack_config(Dispatcher())
    with lenient(manager):
        counts = {name: _count(manager, name) for name in manager.specs}
    enabled = manager.enabled_packs(config)
    print(HEADER)
    for name, spec in sorted(manager.specs.items()):
        status = "enabled" if name in enabled else ("fallback (off)" if spec.fallback else "blocked")
        if name in manager.failures:
            status = "FAILED"
        origin = manager.origins[name]
        print(f"{name:<14}{manager.versions[name]:<10}{config.priority_of(name, spec.priority):>9}"
              f"{counts[name]:>11}  {status:<15}{origin.distribution:<22}{origin.path}")
    for name in sorted(set(manager.failures) - set(manager.specs)):
        origin = manager.origins.get(name)
        dist, version, path = (origin.distribution, origin.version, origin.path) if origin else ("?", "-", "-")
        print(f"{name:<14}{version:<10}{'-':>9}{'-':>11}  {'FAILED':<15}{dist:<22}{path}")
    lines = failure_lines(manager)
    if lines:
        print("\n".join(["", *lines]))
    return _codes.FAILED if manager.failures else _codes.OK


def _count(manager, name: str) -> str:
    if name in manager.failures:
        return "-"
    found = manager.usable_converters(name)
    return "-" if found is None else str(len(found))


def failure_lines(manager) -> list[str]:
    """One paragraph per pack that failed to load: the error and how to block it."""
    from tonnx.dispatch._manager import block_hint

    lines = []
    for name, error in sorted(manager.failures.items()):
        origin = manager.origins.get(name)
        dist = f" (distribution {origin.distribution!r})" if origin else ""
        lines += [f"pack {name!r}{dist} FAILED TO LOAD: {error}", f"  {block_hint(name)}."]
    return lines
