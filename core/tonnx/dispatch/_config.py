"""Which packs are enabled, and at what priority: from the environment and arguments.

Modelled on pytest's plugin switches:

- ``TONNX_DISABLE_PACK_AUTOLOAD=1``: entry points are not loaded, except the packs named
  in ``TONNX_PACKS`` or ``Dispatcher(packs=...)``: an allow-list;
- ``TONNX_PACKS="no:NAME,NAME,NAME=300"``: block a pack (it is not even imported),
  enable a pack that is off by default (a fallback), or set a pack's priority;
- ``TONNX_STRICT_PACKS=0``: a pack that fails to load is skipped with a warning; by
  default it is an error, as pytest treats a broken plugin.

The two switches are booleans read by one parser (:func:`env_flag`): ``1/true/yes/on``
or ``0/false/no/off``, any case, spaces trimmed; unset or empty keeps the default, and
anything else is a :class:`PackConfigError` naming the variable.

The same ``no:NAME`` / ``NAME`` / ``NAME=PRIORITY`` items are accepted by
``Dispatcher(packs=[...])``; arguments win over the environment. Spaces around names and
priorities are trimmed; one list that both blocks and enables a pack is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from tonnx._errors import PackConfigError

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


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


def _name(raw: str, name: str, source: str) -> str:
    name = name.strip()
    if not name or not name.replace("-", "_").isidentifier():
        raise PackConfigError(
            f"{source}: item {raw!r} does not name a pack (expected no:NAME, NAME or "
            f"NAME=PRIORITY, e.g. 'no:onnxscript' or 'aten=150'; `tonnx packs` lists the names)."
        )
    return name


def parse_items(
    items: Iterable[str], base: PackConfig | None = None, *, source: str = "packs"
) -> PackConfig:
    """Applies ``no:NAME`` / ``NAME`` / ``NAME=PRIORITY`` items on top of ``base``.

    ``source`` names where the items come from (``TONNX_PACKS``, ``packs=``) in errors.
    """
    blocked = set(base.blocked) if base else set()
    enabled = set(base.enabled) if base else set()
    priorities = dict(base.priorities) if base else {}
    said: dict[str, str] = {}  # name -> the item of this list that named it
    for raw in items:
        if not isinstance(raw, str):
            raise PackConfigError(f"{source}: item {raw!r} is not a string such as 'no:onnxscript'.")
        item = raw.strip()
        if not item:
            continue
        if item.startswith("no:"):
            name = _name(raw, item[3:], source)
            blocks = True
        else:
            text, sep, value = item.partition("=")
            name, blocks = _name(raw, text, source), False
            if sep:
                try:
                    priorities[name] = int(value.strip())
                except ValueError:
                    raise PackConfigError(
                        f"{source}: item {raw!r}: the priority must be an integer, as in 'aten=150'."
                    ) from None
        if name in said and said[name].startswith("no:") != blocks:
            raise PackConfigError(
                f"{source}: {said[name]!r} and {item!r} both name pack {name!r}, one blocking it "
                f"and one enabling it; keep one."
            )
        said[name] = item
        (blocked if blocks else enabled).add(name)
        (enabled if blocks else blocked).discard(name)
    return PackConfig(frozenset(blocked), frozenset(enabled), tuple(sorted(priorities.items())))


def env_flag(variable: str, default: bool) -> bool:
    """A boolean environment switch: 1/true/yes/on or 0/false/no/off, any case."""
    raw = os.environ.get(variable)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise PackConfigError(
        f"{variable}={raw!r} is not a boolean: set it to 1/true/yes/on or 0/false/no/off "
        f"(any case), or unset it."
    )


def from_environment() -> PackConfig:
    return parse_items(os.environ.get("TONNX_PACKS", "").split(","), source="TONNX_PACKS")


def autoload_disabled() -> bool:
    return env_flag("TONNX_DISABLE_PACK_AUTOLOAD", False)


def strict_loading() -> bool:
    return env_flag("TONNX_STRICT_PACKS", True)
