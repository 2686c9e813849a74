"""Which SOURCE is a speech model export-llm writes, and which encoder-decoders it refuses.

Read from the config alone (``config.json`` of a folder, ``.config`` of a model), before
any weight is loaded:

- ``whisper`` with ``is_encoder_decoder`` (``WhisperForConditionalGeneration``): the encoder
  and decoder folder of :func:`.whisper_export.export_whisper`;
- any other encoder-decoder (BART, T5, Marian, Speech2Text, Moonshine, ...): refused by
  name. Its causal-LM class (``BartForCausalLM``, ``WhisperForCausalLM``) is the decoder
  alone, without the encoder and cross-attention: exported as a causal LM it would be
  another model than the checkpoint's, and the greedy check, run against that same class,
  would not see it;
- everything else (decoder-only models, ``MODULE:CALLABLE`` sources): the causal-LM path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tonnx import UnsupportedError

#: encoder-decoder model types export-llm writes, and the function writing each
SPEECH_TYPES = ("whisper",)


def speech_exporter(source: Any) -> Callable | None:
    """The export function for ``source`` when it is a speech encoder-decoder export-llm
    writes; None for the causal-LM path; an :class:`UnsupportedError` for another
    encoder-decoder."""
    config = _config_of(source)
    if config is None or not getattr(config, "is_encoder_decoder", False):
        return None
    model_type = getattr(config, "model_type", None)
    if model_type == "whisper":
        from .whisper_export import export_whisper

        return export_whisper
    raise UnsupportedError(
        f"model_type {model_type!r} is an encoder-decoder model (config.is_encoder_decoder): "
        f"export-llm writes decoder-only language models and, of the encoder-decoders, "
        f"{', '.join(SPEECH_TYPES)}. Its causal-LM class would be the decoder alone, without "
        f"the encoder and its cross-attention: another model than this checkpoint's."
    )


def _config_of(source: Any) -> Any:
    """The transformers config of a folder or a model; None for a ``MODULE:CALLABLE``
    (it is called once, by the causal-LM path) or anything else (refused there)."""
    import torch

    if isinstance(source, torch.nn.Module):
        return getattr(source, "config", None)
    if not isinstance(source, (str, os.PathLike)):
        return None
    folder = os.fspath(source)
    if not os.path.isfile(os.path.join(folder, "config.json")):
        return None
    import transformers

    try:
        return transformers.AutoConfig.from_pretrained(folder)
    except (ValueError, KeyError, OSError):  # the causal-LM path names the problem
        return None
