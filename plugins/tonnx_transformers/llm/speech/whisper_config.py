"""``genai_config.json`` (model type ``whisper``) and ``audio_processor_config.json``.

The config is written from the exported graphs and the model's config: the cache names and
sizes are checked against the graphs' inputs and outputs (whisper_steps.py names them as
onnxruntime-genai's builder does), the token ids come from the generation config. Keys as
onnxruntime-genai 0.18 reads them for ``whisper`` (its builder's ``make_genai_config``):
``model.encoder`` (``audio_features`` -> ``encoder_hidden_states`` and the cross caches) and
``model.decoder`` (self and cross pasts, logits, self presents).

``audio_processor_config.json`` is the feature extraction onnxruntime-genai's processor
runs on an audio file (``og.Audios`` -> ``audio_features``): decode, STFT, log-mel. Its
sizes come from the source's ``preprocessor_config.json`` (transformers'
``WhisperFeatureExtractor``: ``n_fft``, ``hop_length``, ``chunk_length``, ``feature_size``),
Whisper's defaults where it has none.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tonnx import UnsupportedError

from . import whisper_steps as steps

#: WhisperFeatureExtractor's defaults (what every Whisper checkpoint uses)
_FEATURES = {"n_fft": 400, "hop_length": 160, "chunk_length": 30}


def genai_config(encoder: Any, decoder: Any, config: Any, generation: Any, *, context: int) -> dict:
    """The config as a dict for the exported graphs (``onnx.ModelProto``s, weights not needed)."""
    layers, heads, size, _ = steps.geometry(config)
    _check_names(encoder, decoder, layers)
    ids = {name: _token(generation, config, name) for name in ("bos_token_id", "eos_token_id", "pad_token_id")}
    common = {"head_size": size, "hidden_size": config.d_model, "num_attention_heads": heads,
              "num_hidden_layers": layers, "num_key_value_heads": heads,
              "session_options": {"log_id": "onnxruntime-genai", "provider_options": []}}
    return {
        "model": {
            **ids,
            "context_length": context,
            "decoder": {
                **common, "filename": steps.DECODER_FILE,
                "inputs": {"input_ids": steps.INPUT_IDS,
                           "past_key_names": steps.SELF_PAST[0], "past_value_names": steps.SELF_PAST[1],
                           "cross_past_key_names": steps.CROSS_PAST[0], "cross_past_value_names": steps.CROSS_PAST[1]},
                "outputs": {"logits": steps.LOGITS,
                            "present_key_names": steps.SELF_PRESENT[0], "present_value_names": steps.SELF_PRESENT[1]},
            },
            "encoder": {
                **common, "filename": steps.ENCODER_FILE,
                "num_hidden_layers": config.encoder_layers,
                "num_attention_heads": config.encoder_attention_heads,
                "num_key_value_heads": config.encoder_attention_heads,
                "head_size": config.d_model // config.encoder_attention_heads,
                "inputs": {"audio_features": steps.AUDIO_FEATURES},
                "outputs": {"encoder_hidden_states": steps.HIDDEN_STATES,
                            "cross_present_key_names": steps.CROSS_PRESENT[0],
                            "cross_present_value_names": steps.CROSS_PRESENT[1]},
            },
            "type": "whisper",
            "vocab_size": config.vocab_size,
        },
        "search": {
            "diversity_penalty": 0.0, "do_sample": False, "early_stopping": True, "length_penalty": 1.0,
            "max_length": context, "min_length": 0, "no_repeat_ngram_size": 0, "num_beams": 1,
            "num_return_sequences": 1, "past_present_share_buffer": False, "repetition_penalty": 1.0,
            "temperature": 1.0, "top_k": 1, "top_p": 1.0,
        },
    }


def audio_processor_config(feature_folder: str | None, config: Any) -> dict:
    """onnxruntime-genai's feature extraction, sized as the source's feature extractor."""
    sizes = dict(_FEATURES, feature_size=config.num_mel_bins)
    path = os.path.join(feature_folder, "preprocessor_config.json") if feature_folder else None
    if path and os.path.isfile(path):
        with open(path) as f:
            saved = json.load(f)
        sizes.update({k: saved[k] for k in (*_FEATURES, "feature_size") if k in saved})
    if sizes["feature_size"] != config.num_mel_bins:
        raise UnsupportedError(
            f"{path}: feature_size {sizes['feature_size']} but the model's num_mel_bins is "
            f"{config.num_mel_bins}: give the preprocessor_config.json saved with this model."
        )
    n_fft, hop = int(sizes["n_fft"]), int(sizes["hop_length"])
    return {"feature_extraction": {"sequence": [
        {"operation": {"name": "audio_decoder", "type": "AudioDecoder"}},
        {"operation": {"name": "STFT", "type": "STFTNorm",
                       "attrs": {"n_fft": n_fft, "frame_length": n_fft, "hop_length": hop}}},
        {"operation": {"name": "log_mel_spectrogram", "type": "LogMelSpectrum",
                       "attrs": {"chunk_size": int(sizes["chunk_length"]), "hop_length": hop, "n_fft": n_fft,
                                 "n_mel": int(sizes["feature_size"])}}},
    ]}}


def _check_names(encoder: Any, decoder: Any, layers: int) -> None:
    """The graphs hold every name the config gives onnxruntime-genai."""
    wanted = (
        (encoder.graph.input, [steps.AUDIO_FEATURES]),
        (encoder.graph.output, [steps.HIDDEN_STATES, *(p % i for p in steps.CROSS_PRESENT for i in range(layers))]),
        (decoder.graph.input, [steps.INPUT_IDS, *(p % i for p in (*steps.SELF_PAST, *steps.CROSS_PAST)
                                                  for i in range(layers))]),
        (decoder.graph.output, [steps.LOGITS, *(p % i for p in steps.SELF_PRESENT for i in range(layers))]),
    )
    for values, names in wanted:
        missing = sorted(set(names) - {v.name for v in values})
        if missing:
            raise UnsupportedError(f"the exported Whisper graphs lack {', '.join(missing)}.")


def _token(generation: Any, config: Any, name: str) -> Any:
    value = getattr(generation, name, None)
    if value is None:
        value = getattr(config, name, None)
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def write_json(folder: str, name: str, value: dict) -> None:
    with open(os.path.join(folder, name), "w") as f:
        json.dump(value, f, indent=4)
        f.write("\n")
