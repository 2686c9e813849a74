"""Which vision-language types export-llm writes, and how a folder is recognized as one.

A source folder is a vision-language model when its ``config.json``'s ``model_type`` is
one of :data:`FAMILIES`; the command sends it to :func:`.export.export_vlm` before any work
(the text path would refuse it: it has no causal LM class). A type onnxruntime-genai runs
but export-llm does not write yet is refused by name with the reason (:data:`NOT_YET`).
"""

from __future__ import annotations

import json
import os
from typing import Any

#: the decoder's file (the vision encoder's and the embedding's are vision.onnx, embedding.onnx)
DECODER_FILE = "model.onnx"


def _qwen2_5_vl() -> Any:
    from .qwen2_5_vl_family import Qwen2_5_VL

    return Qwen2_5_VL()


def _mistral3() -> Any:
    from .mistral3_family import Mistral3

    return Mistral3()


#: model_type -> the family's factory
FAMILIES = {"qwen2_5_vl": _qwen2_5_vl, "mistral3": _mistral3}

#: vision-language types onnxruntime-genai 0.18 runs that export-llm does not write yet. The
#: text path refuses them too, without saying why (Qwen3-VL, Phi-3-vision: no causal LM
#: class; Gemma3, whose class transformers lists as a causal LM: "no num_attention_heads"
#: in its top-level config, measured on a tiny Gemma3 folder)
NOT_YET = {
    "qwen3_vl": "its vision encoder (deepstack features fed to three decoder layers) is not written yet",
    "gemma3": "the prompt's image tokens attend to each other both ways in its decoder, which is not written yet",
    "phi3_v": "its vision encoder is not written yet",
}


def model_type(source: Any) -> str | None:
    """The ``model_type`` of a folder's config.json, or None (not a folder, no config)."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    path = os.path.join(os.fspath(source), "config.json")
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            return json.load(f).get("model_type")
    except (OSError, ValueError):
        return None


def is_vision_language(source: Any) -> bool:
    """True for a folder whose model type is a vision-language one (written or refused here)."""
    return model_type(source) in FAMILIES or model_type(source) in NOT_YET


def of_folder(source: str) -> Any:
    """The family that writes ``source``, or an UnsupportedError naming why not."""
    from tonnx import UnsupportedError

    kind = model_type(source)
    if kind in FAMILIES:
        return FAMILIES[kind]()
    reason = NOT_YET.get(kind, "it is not a vision-language type export-llm knows")
    raise UnsupportedError(
        f"{source!r}: model_type {kind!r} is not written by export-llm: {reason}. Vision-language "
        f"types written: {', '.join(sorted(FAMILIES))}.")
