"""SOURCE -> the Whisper model to export: a folder's built on ``meta`` (weights streamed), or
a ``WhisperForConditionalGeneration`` given as an object.

As for causal LMs (``llm/source.py``, whose helpers this uses): the parameters are created
on ``meta`` and read from the safetensors files while each graph's data file is written;
the checkpoint's names are the model's (``proj_out``, tied to the decoder's embedding, is
read under ``model.decoder.embed_tokens.weight``). The greedy check loads the model once
with ``from_pretrained``.
"""

from __future__ import annotations

import os
from typing import Any

from tonnx import UnsupportedError

from ..source import (
    Source,
    _buffers_to_meta,
    _check_dtypes,
    check_shapes,
    checkpoint_names,
    in_memory,
    parameters_on_meta,
    safetensors_files,
)

#: files of a Whisper folder its processor reads, copied beside the tokenizer's
PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json", "normalizer.json")


def load_whisper(source: Any, *, precision: str, tokenizer: str | None) -> Source:
    """A Whisper folder or model -> :class:`~..source.Source` (float32: see whisper_export)."""
    import torch

    if isinstance(source, torch.nn.Module):
        if any(p.device.type == "meta" for p in source.parameters()):
            raise UnsupportedError("SOURCE gave a model on the 'meta' device: give its folder instead.")
        if source.dtype != torch.float32:
            raise UnsupportedError(f"SOURCE gave a Whisper model in {source.dtype}: export-llm reads it in "
                                   f"float32 (model.float(), or give its folder).")
        folder = tokenizer or getattr(source.config, "_name_or_path", None)
        source.eval()
        return Source(model=source, config=source.config, generation_config=source.generation_config,
                      tokenizer_folder=folder if folder and os.path.isdir(folder) else None,
                      reference=lambda: source)
    return _from_folder(os.fspath(source), precision, tokenizer)


def _from_folder(folder: str, precision: str, tokenizer: str | None) -> Source:
    import torch
    import transformers

    weights = safetensors_files(folder)
    config = transformers.AutoConfig.from_pretrained(folder)
    stored, files = _check_dtypes(weights, precision)
    with parameters_on_meta():
        model = transformers.WhisperForConditionalGeneration(config)
    model.eval()
    _buffers_to_meta(model, stored)
    aliases = checkpoint_names(model, stored)
    check_shapes(model, stored, files, aliases or {}, folder)

    def load():
        return transformers.WhisperForConditionalGeneration.from_pretrained(folder, dtype=torch.float32).eval()

    generation = transformers.GenerationConfig.from_pretrained(folder) \
        if os.path.isfile(os.path.join(folder, "generation_config.json")) else model.generation_config
    streamed = Source(model=model, config=config, generation_config=generation, weights=weights,
                      aliases=aliases or {}, tokenizer_folder=tokenizer or folder, reference=load)
    return in_memory(streamed) if aliases is None else streamed
