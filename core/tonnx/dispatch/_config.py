"""Which packs are enabled, and at what priority: from the environment and arguments.

Modelled on pytest's plugin switches:

- ``TONNX_DISABLE_PACK_AUTOLOAD=1``: entry points are not loaded, except the packs named
  in ``TONNX_PACKS`` or ``Dispatcher(packs=...)``: an allow-list;
- ``TONNX_PACKS="no:NAME,NAME,NAME=300"``: block a pack (it is not even imported),
  enable a pack that is off by default (a fallback), or set a pack's priority;
- ``TONNX_STRICT_PACKS=0``: a pack that fails to load is skipped with a warning; by
  default it is an error, as pytest treats a broken plugin.

The same ``no:NAME`` / ``NAME`` / ``NAME=PRIORITY`` items are accepted by
``Dispatcher(packs=[...])``; arguments win over the environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from .._errors import TonnxError


@dataclass(frozen=True)
class PackConfig:
    blocked: frozenset[str] = frozenset()
    enabled: frozenset[str] = frozenset()
    priorities: tuple[tuple[str, int], ...] = ()

    def priority_of(self, name: str, default: int) -> int:
        for pack, priority in self.priorities:
            if pack == name:
                return priority
        return default


def parse_items(items: Iterable[str], base: PackConfig | None = None) -> PackConfig:
    """Applies ``no:NAME`` / ``NAME`` / ``NAME=PRIORITY`` items on top of ``base``."""
    blocked = set(base.blocked) if base else set()
    enabled = set(base.enabled) if base else set()
    priorities = dict(base.priorities) if base else {}
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        if item.startswith("no:"):
            name = item[3:]
            blocked.add(name)
            enabled.discard(name)
        elif "=" in item:
            name, _, value = item.partition("=")
            try:
                priorities[name] = int(value)
            except ValueError:
                raise TonnxError(
                    f"Pack item {raw!r}: priority must be an integer, as in 'aten=150'."
                ) from None
            enabled.add(name)
            blocked.discard(name)
        else:
            enabled.add(item)
            blocked.discard(item)
    return PackConfig(frozenset(blocked), frozenset(enabled), tuple(sorted(priorities.items())))


def from_environment() -> PackConfig:
    return parse_items(os.environ.get("TONNX_PACKS", "").split(","))


def autoload_disabled() -> bool:
    return os.environ.get("TONNX_DISABLE_PACK_AUTOLOAD", "") not in ("", "0")


def strict_loading() -> bool:
    return os.environ.get("TONNX_STRICT_PACKS", "1") != "0"
