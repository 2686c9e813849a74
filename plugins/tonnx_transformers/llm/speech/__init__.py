"""export-llm for speech-to-text encoder-decoders: a Whisper folder -> an onnxruntime-genai folder.

onnxruntime-genai runs Whisper as two graphs: the encoder (audio features -> its hidden
states and every decoder layer's cross-attention keys and values, computed once per audio)
and the decoder step (tokens, the self-attention cache and the cross cache -> logits and
the self-attention cache). This package writes both, with ``genai_config.json`` (model type
``whisper``), the audio processor's config and the tokenizer, and checks the pair against
transformers' ``generate`` before publishing.

- ``route.py``: which SOURCE export-llm writes here; other encoder-decoders are refused by
  name before anything is loaded;
- ``whisper_source.py``: the folder's model built on ``meta``, its weights streamed;
- ``whisper_steps.py``: the two modules exported, their example calls and names;
- ``whisper_export.py``: :func:`export_whisper`, the steps in order;
- ``whisper_config.py``: ``genai_config.json`` and ``audio_processor_config.json``;
- ``whisper_verify.py``: the greedy check, onnxruntime vs transformers, from audio features.
"""

from __future__ import annotations

from .route import speech_exporter

__all__ = ["speech_exporter"]
