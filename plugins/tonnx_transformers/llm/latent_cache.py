"""A multi-head latent attention cache in the one-head-size layout onnxruntime-genai keeps.

DeepSeek-V2/V3 (and the other transformers models whose config has ``kv_lora_rank``) cache,
per layer, one head of the compressed latent (``kv_lora_rank`` wide) as "key" and one head of
the rotary part (``qk_rope_head_dim``) as "value". onnxruntime-genai's decoder has one
``head_size`` for keys and values. So the exported graph keeps each layer's
``[latent | rotary]`` row cut in two halves of ``(kv_lora_rank + qk_rope_head_dim + 1) // 2``
(a zero appended when the sum is odd): the halves are genai's key and value, the cache is as
small as transformers' own, and the model's forward sees its usual cache. The reassembly is
two Concats and Slices per layer, in the graph.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def latent_sizes(config: Any) -> tuple[int, int] | None:
    """(kv_lora_rank, qk_rope_head_dim) of a latent cache, None for a key/value cache."""
    rank = getattr(config, "kv_lora_rank", None)
    return (rank, config.qk_rope_head_dim) if rank else None


def half_size(config: Any) -> int:
    rank, rope = latent_sizes(config)
    return (rank + rope + 1) // 2


@contextlib.contextmanager
def halved_cache(model: Any, config: Any) -> Iterator[None]:
    """While in the block, ``model.forward`` takes and returns the halved cache (a
    ``DynamicCache`` of ``(B, 1, T, half)`` pairs). Nothing changes for a key/value cache."""
    if latent_sizes(config) is None:
        yield
        return
    original = model.forward

    def forward(input_ids, attention_mask=None, position_ids=None, past_key_values=None, **kwargs):
        out = original(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                       past_key_values=_joined(past_key_values, config), **kwargs)
        out.past_key_values = _halved(out.past_key_values, config)
        return out

    model.forward = forward
    try:
        yield
    finally:
        del model.forward


def _joined(cache: Any, config: Any) -> Any:
    """The model's cache, (latent, rotary) per layer, from the halves."""
    import torch
    from transformers.cache_utils import DynamicCache

    rank, rope = latent_sizes(config)
    layers = []
    for layer in cache.layers:
        row = torch.cat([layer.keys, layer.values], dim=-1)
        layers.append((row[..., :rank], row[..., rank:rank + rope]))
    return DynamicCache(layers)


def _halved(cache: Any, config: Any) -> Any:
    """The halves, from the model's (latent, rotary) cache; refuses any other layout."""
    import torch
    from transformers.cache_utils import DynamicCache

    from tonnx import UnsupportedError

    rank, rope = latent_sizes(config)
    half = half_size(config)
    layers = []
    for i, layer in enumerate(cache.layers):
        latent, rotary = layer.keys, layer.values
        if latent.shape[1] != 1 or latent.shape[-1] != rank or rotary.shape[-1] != rope:
            raise UnsupportedError(
                f"{config.model_type}: layer {i} caches key {tuple(latent.shape)} and value "
                f"{tuple(rotary.shape)}, not the one-head latent ({rank}) and rotary part ({rope}) "
                f"its kv_lora_rank promises; export-llm cannot lay it out for onnxruntime-genai."
            )
        parts = [latent, rotary]
        if 2 * half > rank + rope:
            parts.append(rotary.new_zeros(*rotary.shape[:-1], 2 * half - rank - rope))
        row = torch.cat(parts, dim=-1)
        layers.append((row[..., :half], row[..., half:]))
    return DynamicCache(layers)
