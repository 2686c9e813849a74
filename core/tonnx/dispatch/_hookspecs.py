"""The hooks a converter pack implements; this file is their documentation.

A pack is any module or object with ``@hookimpl``-marked functions named after these
specs, announced under the ``tonnx.packs`` entry-point group (or registered directly).
"""

from __future__ import annotations

import pluggy

PROJECT = "tonnx"

hookspec = pluggy.HookspecMarker(PROJECT)
#: Marks a pack's hook implementation; it only records an attribute on the function.
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def tonnx_pack():
    """Describe the pack: return one :class:`tonnx.PackSpec`.

    Called once per process when packs are discovered. Keep it cheap: the converters
    themselves are imported by ``PackSpec.load`` only when a registry is first built.
    """
