"""tonnx's onnxscript fallback pack: ops without a tonnx converter, via onnxscript's torchlib.

A fallback pack: it takes part only when asked for
(``to_onnx(..., dispatcher=tonnx.Dispatcher(fallback="onnxscript"))`` or
``TONNX_PACKS=onnxscript``), below every regular pack, and what it converts is listed in
the model's ``pkg.tonnx.fallback_ops`` metadata. docs/onnxscript-fallback.md explains it.
"""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

__version__ = "0.1.0"

#: Below the aten pack (100): a direct converter always wins over the fallback.
PRIORITY = 10


def _load():
    from ._table import converters

    return converters()


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="onnxscript",
        load=_load,
        version=__version__,
        priority=PRIORITY,
        fallback=True,
        description="fallback: aten ops translated by onnxscript's torchlib, inlined",
    )
