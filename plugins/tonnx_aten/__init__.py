"""tonnx's core ATen converter pack: the ops real models emit under torch.export."""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

__version__ = "0.1.0"


def _load():
    from ._table import converters

    return converters()


def _rewrites():
    from .rewrites import REWRITES

    return REWRITES


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="aten",
        load=_load,
        rewrites=_rewrites,
        version=__version__,
        priority=100,
        description="ATen operators (core ATen IR and high-level ops) to ONNX",
    )
