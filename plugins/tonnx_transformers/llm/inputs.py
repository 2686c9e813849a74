"""The call the folder's model is exported with: one step of generation with a cache.

Named as onnxruntime-genai's config names them (tonnx's cache names): ``input_ids``,
``attention_mask``, ``position_ids`` (when ``forward`` takes them),
``past_key_values.{i}.key|value``; batch, sequence, cache and mask lengths dynamic. Every
dynamic size of the example is 2 or more (torch.export specializes 0 and 1); the graph runs
an empty cache (docs/llm-export.md).
"""

from __future__ import annotations

import inspect
from typing import Any

BATCH, SEQ, PAST = 2, 3, 5


def cache_geometry(config: Any) -> tuple[int, int, int]:
    """(layers, key/value heads, head size) of a decoder's cache, from its config; a latent
    cache is one head of half the latent and rotary row (``latent_cache.py``). Multi-query
    models (GPT-BigCode, Falcon) cache one head whatever else their config says."""
    from tonnx import UnsupportedError

    from .latent_cache import half_size, latent_sizes

    if latent_sizes(config):
        return config.num_hidden_layers, 1, half_size(config)
    try:
        heads = getattr(config, "num_attention_heads", None)
        head_dim = getattr(config, "head_dim", None) or (config.hidden_size // heads if heads else None)
    except Exception as e:  # e.g. transformers' AmbiguousGlobalPerLayerAttributeError
        raise UnsupportedError(
            f"{config.model_type}: its attention's head size is not one number ({type(e).__name__}: "
            f"{str(e).splitlines()[0]}); onnxruntime-genai's decoder needs one head size for every layer."
        ) from e
    if not heads:
        raise UnsupportedError(
            f"{config.model_type}: its config has no num_attention_heads, so no key/value cache "
            f"(a state-space model?); onnxruntime-genai's decoder needs one per layer."
        )
    if getattr(config, "new_decoder_architecture", False):  # Falcon 40B/180B broadcast to every head
        kv_heads = heads
    elif getattr(config, "multi_query", False):
        kv_heads = 1
    else:
        kv_heads = getattr(config, "num_key_value_heads", None) or getattr(config, "num_kv_heads", None) or heads
    return config.num_hidden_layers, kv_heads, head_dim


#: transformers' mask builders that apply a window; a modeling file using one imports it
_WINDOWED_MASKS = ("create_sliding_window_causal_mask", "create_chunked_causal_mask")


def check_cache_window(model: Any, config: Any) -> None:
    """Refuses a model whose generation cache keeps a window (transformers crops its sliding
    layers) while its modeling file builds no windowed mask (Moshi): the graph keeps the
    whole cache, so past the window it would attend to keys transformers has dropped.
    Mistral, Gemma 2/3, GPT-OSS, Llama 4 apply the window in the mask: exact either way."""
    import sys

    from transformers.cache_utils import DynamicCache, DynamicSlidingWindowLayer

    from tonnx import UnsupportedError

    try:
        layers = DynamicCache(config=config).layers
    except Exception:  # a cache generate() could not build either: the export says why
        return
    windowed = [i for i, layer in enumerate(layers) if isinstance(layer, DynamicSlidingWindowLayer)]
    module = sys.modules.get(type(model).__module__)
    if windowed and not any(hasattr(module, name) for name in _WINDOWED_MASKS):
        raise UnsupportedError(
            f"{config.model_type}: transformers keeps only the last "
            f"{getattr(config, 'sliding_window', '?')} positions in the cache of layers {windowed} "
            f"and its attention mask applies no window, so the window lives in the cache alone; "
            f"export-llm's graph keeps the whole cache and would be wrong past the window."
        )


def takes_position_ids(model: Any) -> bool:
    return "position_ids" in inspect.signature(model.forward).parameters


def example_call(model: Any, config: Any, *, device: str) -> tuple[dict, dict]:
    """(kwargs, dynamic_shapes) of a step with a cache, tensors on ``device``."""
    import torch
    from transformers.cache_utils import DynamicCache

    layers, kv_heads, head_dim = cache_geometry(config)
    shape = (BATCH, kv_heads, PAST, head_dim)
    dtype = model.dtype  # the cache is kept in the model's dtype (float16 with --precision fp16)
    cache = DynamicCache([
        (torch.zeros(shape, device=device, dtype=dtype), torch.zeros(shape, device=device, dtype=dtype))
        for _ in range(layers)
    ])
    mask = torch.ones(BATCH, PAST + SEQ, dtype=torch.int64)
    kwargs = {
        "input_ids": torch.zeros(BATCH, SEQ, dtype=torch.int64, device=device),
        "attention_mask": mask.to(device),
        "position_ids": (mask.cumsum(-1) - 1)[:, -SEQ:].to(device),
        "past_key_values": cache,
    }
    dynamic = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "total_sequence"},
        "position_ids": {0: "batch", 1: "sequence"},
        "past_key_values": {0: "batch", 2: "past_sequence"},
    }
    if not takes_position_ids(model):
        del kwargs["position_ids"], dynamic["position_ids"]
    return kwargs, dynamic
