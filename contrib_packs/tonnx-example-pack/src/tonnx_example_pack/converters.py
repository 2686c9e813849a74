"""Converters of the pack: its op -> a node of the pack's ONNX domain.

Imports only the public surface of tonnx (``tonnx`` and ``tonnx.converters``).
"""

from __future__ import annotations

from onnx import TensorProto

from tonnx import Converter, UnsupportedError

from . import DOMAIN


# tonnx_example::soft_clip.default
def example_soft_clip(g, sts, outputs, x, bound):
    "soft_clip(Tensor x, float bound) -> Tensor"
    if sts.dtype != TensorProto.FLOAT:
        raise UnsupportedError(
            f"tonnx_example::soft_clip: {DOMAIN}::SoftClip has float32 kernels only, the "
            f"input is ONNX type {sts.dtype}; cast the input to float32 in the model."
        )
    return g.make_node("SoftClip", [x], outputs, domain=DOMAIN, bound=float(bound))


CONVERTERS = (Converter("tonnx_example::soft_clip.default", example_soft_clip),)
