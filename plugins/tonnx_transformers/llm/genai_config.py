"""``genai_config.json``: what onnxruntime-genai needs to run the exported decoder.

Written from data: the cache's names, layer count, key/value heads and head size are read
from the exported graph's inputs and outputs, the rest from the model's config and its
generation config. Nothing is copied from a template. The model type is onnxruntime-genai's
generic ``decoder``: the graph is self-contained (positions, rotary, masking are in it), so
no architecture-specific behaviour of the runtime is wanted.

``past_present_share_buffer`` is true when the graph allows it: every past is read by
``GroupQueryAttention`` only and every present is that op's output, so onnxruntime-genai
may pass one ``max_length`` buffer per cache as both, which the op updates in place (the
graph reads no length from the cache's shape). Otherwise (standard attention, e.g. for
onnxruntime before 1.32) it is false: the presents are ``past + sequence`` long, a new
buffer each step, which onnxruntime-genai then feeds back as the next past.
"""

from __future__ import annotations

import re
from typing import Any

from tonnx import UnsupportedError

_CACHE = re.compile(r"^(?P<prefix>.*?)\.(?P<layer>\d+)\.(?P<kind>key|value)$")


def shares_buffers(onx: Any) -> bool:
    """True when each ``past_key_values.*`` input is read only as GroupQueryAttention's
    past (inputs 3, 4) and each ``present.*`` output is that op's present (outputs 1, 2)."""
    pasts = {i.name for i in onx.graph.input if i.name.startswith("past_key_values.")}
    presents = {o.name for o in onx.graph.output if o.name.startswith("present.")}
    if not pasts or not presents:
        return False
    read, written = set(), set()
    for node in onx.graph.node:
        fused = node.op_type == "GroupQueryAttention" and node.domain == "com.microsoft"
        for i, name in enumerate(node.input):
            if name in pasts:
                if not fused or i not in (3, 4):
                    return False
                read.add(name)
        for i, name in enumerate(node.output):
            if name in presents:
                if not fused or i not in (1, 2):
                    return False
                written.add(name)
    return read == pasts and written == presents


def genai_config(onx: Any, config: Any, generation: Any, *, context: int, filename: str = "model.onnx") -> dict:
    """The config as a dict, for the graph ``onx`` (an ``onnx.ModelProto``, weights not needed);
    ``context``: the context length (export_llm's option, else :func:`context_length`)."""
    inputs = {i.name: i for i in onx.graph.input}
    outputs = {o.name: o for o in onx.graph.output}
    past_key, past_value, layers = _cache_names(list(inputs), "past")
    present_key, present_value, present_layers = _cache_names(list(outputs), "present")
    if present_layers != layers:
        raise UnsupportedError(f"The graph has {layers} past and {present_layers} present layers.")
    for needed, where in (("input_ids", inputs), ("attention_mask", inputs), ("logits", outputs)):
        if needed not in where:
            raise UnsupportedError(f"The exported graph has no {needed!r}: {sorted(where)}.")
    _, kv_heads, _, head_size = _dims(inputs[past_key % 0])
    vocab = _dims(outputs["logits"])[-1]
    eos = _ids(generation.eos_token_id) or _ids(config.eos_token_id)
    pad = _ids(generation.pad_token_id) or _ids(getattr(config, "pad_token_id", None)) or eos
    names_in = {"input_ids": "input_ids", "attention_mask": "attention_mask"}
    if "position_ids" in inputs:
        names_in["position_ids"] = "position_ids"
    decoder = {
        "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
        "filename": filename,
        "head_size": head_size,
        "hidden_size": config.hidden_size,
        "inputs": {**names_in, "past_key_names": past_key, "past_value_names": past_value},
        "outputs": {"logits": "logits", "present_key_names": present_key,
                    "present_value_names": present_value},
        "num_attention_heads": config.num_attention_heads,
        "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads,
    }
    model = {
        "bos_token_id": _one(_ids(generation.bos_token_id) or _ids(getattr(config, "bos_token_id", None))),
        "context_length": context,
        "decoder": decoder,
        "eos_token_id": _one(eos),
        "pad_token_id": pad[0] if pad else None,
        "type": "decoder",
        "vocab_size": vocab if isinstance(vocab, int) else config.vocab_size,
    }
    return {"model": {k: v for k, v in model.items() if v is not None},
            "search": _search(generation, context, shares_buffers(onx))}


def _cache_names(names: list[str], prefix: str) -> tuple[str, str, int]:
    """('past_key_values.%d.key', 'past_key_values.%d.value', layers) from the names."""
    found: dict[str, dict[str, set[int]]] = {}
    for name in names:
        m = _CACHE.match(name)
        if m and m["prefix"].startswith(prefix):
            found.setdefault(m["prefix"], {}).setdefault(m["kind"], set()).add(int(m["layer"]))
    if len(found) != 1:
        raise UnsupportedError(
            f"Expected one cache named {prefix}*.{{i}}.key|value in the graph, found "
            f"{sorted(found) or 'none'} among {names}: onnxruntime-genai needs a plain "
            f"per-layer key/value cache."
        )
    (stem, kinds), = found.items()
    layers = kinds.get("key", set())
    if kinds.get("value") != layers or layers != set(range(len(layers))):
        raise UnsupportedError(f"The cache {stem}.{{i}}.key|value is not one key and one value per layer 0..n-1.")
    return f"{stem}.%d.key", f"{stem}.%d.value", len(layers)


def _dims(value_info: Any) -> list:
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in value_info.type.tensor_type.shape.dim]


def _ids(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]


def _one(ids: list[int]) -> Any:
    return None if not ids else ids[0] if len(ids) == 1 else ids


def context_length(config: Any) -> int:
    for name in ("max_position_embeddings", "n_positions", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise UnsupportedError(
        f"{config.model_type}: no max_position_embeddings in its config (ALiBi models have no "
        f"position limit), so the folder's context_length is unknown; pass --context-length N "
        f"(export_llm(..., context_length=N)), the longest sequence the folder will run."
    )


def _search(generation: Any, context: int, share: bool) -> dict:
    """Search defaults from the generation config; the caller's options override them."""
    def get(name, default):
        value = getattr(generation, name, None)
        return default if value is None else value

    return {
        "diversity_penalty": float(get("diversity_penalty", 0.0)),
        "do_sample": bool(get("do_sample", False)),
        "early_stopping": True,
        "length_penalty": float(get("length_penalty", 1.0)),
        "max_length": context,
        "min_length": 0,
        "no_repeat_ngram_size": int(get("no_repeat_ngram_size", 0)),
        "num_beams": int(get("num_beams", 1)),
        "num_return_sequences": int(get("num_return_sequences", 1)),
        "past_present_share_buffer": share,
        "repetition_penalty": float(get("repetition_penalty", 1.0)),
        "temperature": float(get("temperature", 1.0)),
        "top_k": int(get("top_k", 50)),
        "top_p": float(get("top_p", 1.0)),
    }
