"""onnxruntime contrib pack: fused ``com.microsoft`` ops where onnxruntime runs them faster.

Installing it changes the exported graph (priority 200, above the aten pack's 100):
attention becomes ``GroupQueryAttention`` (grouped or not, with or without a KV cache: the
op then reads ``past_key_values.*`` and writes ``present.*``; the query, key and value
projections packed into one MatMul, through a per-head q/k norm too (:mod:`.qk_norm`),
rotary embeddings done inside the op), rotary
embeddings elsewhere ``RotaryEmbedding``, Mixtral, Qwen3-MoE, OLMoE, Qwen2-MoE, GPT-OSS
and DeepSeek-V3 expert blocks ``MoE`` (an export patch routes them through the pack's ops
``tonnx_ortcontrib::softmax_topk_moe`` / ``routed_moe``, see :mod:`.moe`). A case the fused op does not
compute exactly as torch is left to the aten pack. ``Dispatcher(packs=["no:ortcontrib"])``
or ``TONNX_PACKS=no:ortcontrib`` gives the standard-domain graph. :mod:`.reference` runs
the emitted ops in onnx's reference evaluator (``tonnx.testing.run_reference``).

The graph is for one onnxruntime version (:mod:`._target`): the one an export names
(``Dispatcher(target_runtime={"onnxruntime": "1.31.1"})``: export here, run elsewhere),
else the installed one, else (none installed) 1.31.1, the oldest supported. Each fused op
takes the form exact on that version or the block keeps the standard graph (before 1.32:
attention with a KV cache keeps it, and MoE always renormalizes its weights, the sum
multiplied back: 1.31's unnormalized MoE may return zeros); ``tonnx explain`` says which. The model records the oldest
onnxruntime its com.microsoft nodes need as ``pkg.tonnx.min_onnxruntime``.

Measured and left out (bench/bench_fused_ops.py): ``SkipSimplifiedLayerNormalization``
runs slower than the Add and ``SimplifiedLayerNormalization`` it replaces, and
onnxruntime already fuses the aten pack's RMSNorm and gelu into the same kernels the
``com.microsoft`` ops would use.
"""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

__version__ = "0.1.0"

#: onnxruntime's contrib domain, version 1 for every op used here
MS_DOMAIN = "com.microsoft"


def _load_for_runtime(target_runtime):
    from . import _target, attention, moe

    target = _target.resolve(target_runtime)
    return [*attention.converters(target), *moe.converters(target)]


def _load():
    return _load_for_runtime({})


def _runtime_requirements(nodes):
    from ._target import requirements

    return requirements(nodes)


def _export_patches():
    from .moe import export_patches

    return export_patches()


def _rewrites():
    from . import attention, cache, layout, qk_norm, rotary

    return [*layout.REWRITES, *rotary.REWRITES, *attention.REWRITES, *qk_norm.REWRITES, *cache.REWRITES]


def _reference_kernels():
    from .reference import KERNELS

    return list(KERNELS)


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="ortcontrib",
        load=_load,
        rewrites=_rewrites,
        version=__version__,
        priority=200,
        domains={MS_DOMAIN: 1},
        description="onnxruntime com.microsoft fused ops (GroupQueryAttention, RotaryEmbedding, MoE)",
        reference_kernels=_reference_kernels,
        export_patches=_export_patches,
        load_for_runtime=_load_for_runtime,
        runtime_requirements=_runtime_requirements,
    )
