"""``genai_config.json`` of a vision-language folder: the decoder's section read off its graph
(as for a text decoder, :mod:`..genai_config`), the ``vision`` and ``embedding`` sections
and the model's image token ids given by the family."""

from __future__ import annotations

from typing import Any

from tonnx import UnsupportedError

from ..genai_config import _cache_names, _dims, _ids, _one, _search, shares_buffers


def vlm_genai_config(onx: Any, text: Any, generation: Any, *, context: int, model_type: str, decoder_file: str,
                     tokens: dict, vision: dict, embedding: dict) -> dict:
    """The config as a dict; ``onx``: the decoder's graph, ``text``: the text config."""
    inputs = {i.name: i for i in onx.graph.input}
    outputs = {o.name: o for o in onx.graph.output}
    past_key, past_value, layers = _cache_names(list(inputs), "past")
    present_key, present_value, _ = _cache_names(list(outputs), "present")
    for needed, where in (("inputs_embeds", inputs), ("attention_mask", inputs), ("position_ids", inputs),
                          ("logits", outputs)):
        if needed not in where:
            raise UnsupportedError(f"The exported decoder has no {needed!r}: {sorted(where)}.")
    _, kv_heads, _, head_size = _dims(inputs[past_key % 0])
    eos = _ids(generation.eos_token_id) or _ids(text.eos_token_id)
    pad = _ids(generation.pad_token_id) or _ids(getattr(text, "pad_token_id", None)) or eos
    decoder = {
        "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
        "filename": decoder_file,
        "head_size": head_size,
        "hidden_size": text.hidden_size,
        "inputs": {"inputs_embeds": "inputs_embeds", "attention_mask": "attention_mask",
                   "position_ids": "position_ids", "past_key_names": past_key, "past_value_names": past_value},
        "outputs": {"logits": "logits", "present_key_names": present_key, "present_value_names": present_value},
        "num_attention_heads": text.num_attention_heads,
        "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads,
    }
    model = {
        "bos_token_id": _one(_ids(generation.bos_token_id) or _ids(getattr(text, "bos_token_id", None))),
        "context_length": context,
        "decoder": decoder,
        "embedding": embedding,
        "vision": vision,
        "eos_token_id": _one(eos),
        "pad_token_id": pad[0] if pad else None,
        "type": model_type,
        "vocab_size": text.vocab_size,
        **{k: int(v) for k, v in tokens.items() if v is not None},
    }
    return {"model": {k: v for k, v in model.items() if v is not None},
            "search": _search(generation, context, shares_buffers(onx))}
