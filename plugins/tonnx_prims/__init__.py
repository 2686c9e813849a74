"""tonnx's prims pack: the ``torch.ops.prims`` ops of graphs decomposed below ATen.

They come from ``torch._refs``-based decompositions, from ``torch.compile`` graphs and
from user code calling ``torch.ops.prims`` directly (``torch.export`` keeps them).
"""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

__version__ = "0.1.0"


def _load():
    from ._table import converters

    return converters()


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="prims",
        load=_load,
        version=__version__,
        priority=100,
        description="torch.ops.prims (the primitives of torch._refs decompositions) to ONNX",
    )
