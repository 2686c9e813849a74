"""A converter pack for ``tonnx_testpack::twice``, found by tonnx through its entry point."""

from __future__ import annotations

from tonnx import Converter, PackSpec, hookimpl


# tonnx_testpack::twice.default
def twice(g, sts, outputs, x):
    "twice(Tensor x) -> Tensor"
    return g.op.Add(x, x, outputs=outputs)


def _load():
    return [Converter("tonnx_testpack::twice.default", twice)]


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(name="testpack", load=_load, version="0.3.1", priority=50)


def define_op():
    """Defines the torch op this pack converts (tests call it; a real pack's library would)."""
    import torch

    lib = torch.library.Library("tonnx_testpack", "FRAGMENT")
    if not hasattr(torch.ops.tonnx_testpack, "twice"):
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
        lib.impl("twice", lambda x: torch.empty_like(x), "Meta")
    return lib
