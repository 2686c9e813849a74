"""onnxruntime contrib pack: fused ``com.microsoft`` ops where onnxruntime runs them faster.

Installing it changes the exported graph (priority 200, above the aten pack's 100):
attention becomes ``MultiHeadAttention`` / ``GroupQueryAttention``, rotary embeddings
``RotaryEmbedding``, RMSNorm ``SimplifiedLayerNormalization`` (with the residual Add,
``SkipSimplifiedLayerNormalization``), gelu ``Gelu`` / ``FastGelu``. A case a fused op
does not compute exactly as torch is left to the aten pack. ``Dispatcher(packs=
["no:ortcontrib"])`` or ``TONNX_PACKS=no:ortcontrib`` gives the standard-domain graph.
"""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

__version__ = "0.1.0"

#: onnxruntime's contrib domain, version 1 for every op used here
MS_DOMAIN = "com.microsoft"


def _load():
    from . import activations, attention, normalization

    return [*attention.CONVERTERS, *activations.CONVERTERS, *normalization.CONVERTERS]


def _rewrites():
    from . import attention, layout, normalization, rotary

    return [*layout.REWRITES, *normalization.REWRITES, *rotary.REWRITES, *attention.REWRITES]


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="ortcontrib",
        load=_load,
        rewrites=_rewrites,
        version=__version__,
        priority=200,
        domains={MS_DOMAIN: 1},
        description="onnxruntime com.microsoft fused ops (attention, rotary, RMSNorm, gelu)",
    )
