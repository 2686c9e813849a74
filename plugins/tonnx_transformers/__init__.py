"""transformers pack: what tonnx needs to export ``transformers`` models, shipped with tonnx.

- **Export patches** (``patches.py``), entered around ``torch.export``: the cache classes
  (``DynamicCache``, ``EncoderDecoderCache``) flatten into tensors named
  ``past_key_values.{i}.key`` / ``present.{i}.key``, the eager experts loop of
  mixture-of-experts models runs over every expert, and two models' data-dependent
  branches are written without the branch (FSMT's padding mask, FastSpeech2-Conformer's
  frame count).
- **Converters** (``moe.py``) for the ops transformers registers under
  ``torch.ops.transformers``: ``transformers::grouped_mm_fallback``, which transformers 5
  runs for mixture-of-experts layers (Mixtral, Qwen3-MoE, DeepSeek-V3, ...) whenever torch's
  grouped matmul cannot be used (always under torch.export on CPU with float32 weights).

- **``tonnx export-llm``** (``llm/``, :func:`export_llm`): a causal LM -> a folder
  onnxruntime-genai runs (``model.onnx``, ``genai_config.json``, tokenizer files).

It ships inside tonnx's distribution so that ``pip install tonnx transformers`` exports an LLM
with its cache with no extra step. Nothing here imports transformers: without it imported,
the patches do nothing and the converters are never asked for. ``Dispatcher(packs=
["no:transformers"])`` or ``TONNX_PACKS=no:transformers`` blocks the pack, patches included
(a cache registration made by an earlier export of the process stays; see ``cache.py``).
"""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

from .llm import GreedyCheckError, LLMExport, export_llm

__all__ = ["GreedyCheckError", "LLMExport", "export_llm"]

__version__ = "0.1.0"


def _load():
    from . import moe

    return list(moe.CONVERTERS)


def _commands(sub):
    from .llm.command import add_commands

    add_commands(sub)


def _export_patches():
    from .patches import export_patches

    return export_patches()


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="transformers",
        load=_load,
        version=__version__,
        priority=100,
        description=(
            "transformers models: cache pytree nodes, eager experts, FSMT/FastSpeech2 export "
            "patches, transformers::grouped_mm_fallback"
        ),
        export_patches=_export_patches,
        commands=_commands,
    )
