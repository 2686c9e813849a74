"""Subcommands contributed by packs (``PackSpec.commands``), e.g. ``tonnx export-llm``.

The core names no model library: a command about one (transformers' LLM folders) lives in
its pack. Packs are discovered here with a manager of their own, leniently and quietly, so
that building the parser never changes how the command itself treats a broken pack (the
process's manager, created later by the command, is as strict as ``TONNX_STRICT_PACKS``
says) and ``tonnx packs`` still lists it. A blocked pack (``TONNX_PACKS=no:NAME``) adds no
command.
"""

from __future__ import annotations

import argparse

from tonnx._errors import PackLoadError


def add_pack_commands(sub) -> None:
    """Lets each enabled pack with a ``commands`` hook add its subcommands to ``sub``."""
    from tonnx import Dispatcher
    from tonnx.dispatch._manager import PackManager, _quiet_failures, block_hint

    with _quiet_failures():
        manager = PackManager(strict=False)
    for name, spec in sorted(manager.enabled_packs(manager.pack_config(Dispatcher())).items()):
        if spec.commands is None:
            continue
        try:
            spec.commands(sub)
        except argparse.ArgumentError as e:  # argparse: "conflicting subparser: NAME"
            raise PackLoadError(
                f"Pack {name!r} adds a command whose name is taken ({e}); the pack must "
                f"rename it. {block_hint(name)}."
            ) from e
        except Exception as e:
            raise PackLoadError(
                f"Pack {name!r}: its commands() raised {type(e).__name__}: {e}. "
                f"{block_hint(name)}."
            ) from e
