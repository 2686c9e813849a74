"""The two graphs of a Whisper folder: the modules exported, their example calls and names.

Names are the ones onnxruntime-genai's builder gives its Whisper folders (``genai_config.json``
points to them, whisper_config.py):

- encoder: ``audio_features`` ``[batch, mels, 2 * max_source_positions]`` -> ``hidden_states``
  and, for each decoder layer ``i``, ``present_key_cross_{i}`` / ``present_value_cross_{i}``
  ``[batch, heads, max_source_positions, head_size]``: the cross-attention keys and values,
  computed once per audio. onnxruntime-genai 0.18 feeds 3000 frames (30 s), as transformers'
  encoder requires (``2 * max_source_positions``);
- decoder: ``input_ids`` ``[batch, sequence]``, ``past_key_self_{i}`` / ``past_value_self_{i}``
  ``[batch, heads, past_sequence, head_size]`` and the cross cache ``past_key_cross_{i}`` /
  ``past_value_cross_{i}`` -> ``logits`` and ``present_key_self_{i}`` / ``present_value_self_{i}``.

Both call transformers' own modules: the encoder step is ``model.encoder`` followed by each
decoder layer's ``encoder_attn.k_proj`` / ``v_proj`` shaped as ``WhisperAttention`` shapes
them; the decoder step is ``model.decoder`` with an ``EncoderDecoderCache`` whose cross
cache is filled (transformers then reads the cross keys and values from it) and
``proj_out``. The modules keep the model's attribute names (``model``, ``proj_out``), so
their weights have the checkpoint's names and are streamed from it.
"""

from __future__ import annotations

from typing import Any

import torch

#: example sizes (torch.export specializes 0 and 1: every dynamic size is 2 or more)
BATCH, SEQ, PAST = 2, 3, 5

ENCODER_FILE, DECODER_FILE = "encoder.onnx", "decoder.onnx"
AUDIO_FEATURES, HIDDEN_STATES, INPUT_IDS, LOGITS = "audio_features", "hidden_states", "input_ids", "logits"
CROSS_PRESENT = ("present_key_cross_%d", "present_value_cross_%d")
SELF_PAST = ("past_key_self_%d", "past_value_self_%d")
CROSS_PAST = ("past_key_cross_%d", "past_value_cross_%d")
SELF_PRESENT = ("present_key_self_%d", "present_value_self_%d")


class WhisperEncoderStep(torch.nn.Module):
    """audio features -> (hidden states, cross keys per layer, cross values per layer)."""

    def __init__(self, whisper: Any):
        super().__init__()
        self.model = whisper.model

    def forward(self, audio_features):
        hidden = self.model.encoder(audio_features).last_hidden_state
        keys, values = [], []
        for layer in self.model.decoder.layers:
            attention = layer.encoder_attn
            shape = (hidden.shape[0], -1, attention.num_heads, attention.head_dim)
            keys.append(attention.k_proj(hidden).view(shape).transpose(1, 2))
            values.append(attention.v_proj(hidden).view(shape).transpose(1, 2))
        return hidden, keys, values


class WhisperDecoderStep(torch.nn.Module):
    """One decoder step with both caches -> (logits, self keys, self values)."""

    def __init__(self, whisper: Any):
        import inspect

        super().__init__()
        self.model = whisper.model
        self.proj_out = whisper.proj_out
        # transformers 5.24 calls the cache argument ``cache``, 5.23 ``past_key_values``; under
        # the wrong name it lands in ``**kwargs`` and the decoder runs without either cache
        parameters = inspect.signature(whisper.model.decoder.forward).parameters
        self.cache_argument = "cache" if "cache" in parameters else "past_key_values"

    def forward(self, input_ids, past_keys, past_values, cross_keys, cross_values):
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache

        cache = EncoderDecoderCache(DynamicCache(list(zip(past_keys, past_values))),
                                    DynamicCache(list(zip(cross_keys, cross_values))))
        # the decoder layers run cross-attention when encoder states are given; with the
        # cross cache filled they read its keys and values and not these (no graph input)
        no_states = cross_keys[0].new_zeros(input_ids.shape[0], 0, self.proj_out.in_features)
        out = self.model.decoder(input_ids=input_ids, encoder_hidden_states=no_states, use_cache=True,
                                 **{self.cache_argument: cache})
        presents = out.cache if hasattr(out, "cache") else out.past_key_values
        layers = presents.self_attention_cache.layers
        return self.proj_out(out.last_hidden_state), [lay.keys for lay in layers], [lay.values for lay in layers]


def geometry(config: Any) -> tuple[int, int, int, int]:
    """(decoder layers, heads, head size, encoder positions) of the caches."""
    heads = config.decoder_attention_heads
    return config.decoder_layers, heads, config.d_model // heads, config.max_source_positions


def encoder_call(config: Any, *, device: str, dtype: Any) -> dict[str, Any]:
    """``export_program``/``convert`` arguments of the encoder step."""
    layers = config.decoder_layers
    features = torch.zeros(BATCH, config.num_mel_bins, 2 * config.max_source_positions, device=device, dtype=dtype)
    return {
        "args": (features,),
        "dynamic_shapes": ({0: "batch_size"},),
        "input_names": [AUDIO_FEATURES],
        "output_names": [HIDDEN_STATES, *_per_layer(CROSS_PRESENT[0], layers), *_per_layer(CROSS_PRESENT[1], layers)],
    }


def decoder_call(config: Any, *, device: str, dtype: Any) -> dict[str, Any]:
    """``export_program``/``convert`` arguments of the decoder step."""
    layers, heads, size, frames = geometry(config)

    def cache(length):
        return [torch.zeros(BATCH, heads, length, size, device=device, dtype=dtype) for _ in range(layers)]

    past = [{0: "batch_size", 2: "past_sequence_length"}] * layers
    cross = [{0: "batch_size"}] * layers
    return {
        "kwargs": {"input_ids": torch.zeros(BATCH, SEQ, dtype=torch.int64, device=device),
                   "past_keys": cache(PAST), "past_values": cache(PAST),
                   "cross_keys": cache(frames), "cross_values": cache(frames)},
        "dynamic_shapes": {"input_ids": {0: "batch_size", 1: "sequence_length"},
                           "past_keys": past, "past_values": past, "cross_keys": cross, "cross_values": cross},
        "input_names": [INPUT_IDS, *(n for pattern in (*SELF_PAST, *CROSS_PAST) for n in _per_layer(pattern, layers))],
        "output_names": [LOGITS, *_per_layer(SELF_PRESENT[0], layers), *_per_layer(SELF_PRESENT[1], layers)],
    }


def _per_layer(pattern: str, layers: int) -> list[str]:
    return [pattern % i for i in range(layers)]
