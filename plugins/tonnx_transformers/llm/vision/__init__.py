"""export-llm for vision-language models: the vision encoder, the embedding step and the
decoder as three graphs, with the configs onnxruntime-genai's multimodal processor reads.

- ``families.py``: which model types are written (``qwen2_5_vl``, ``mistral3``), which are
  refused and why;
- ``export.py``: :func:`export_vlm`, the steps in order;
- ``family.py``: what the families share (embedding and decoder steps, genai_config.json);
- ``qwen2_5_vl.py``, ``mistral3.py``: each type's traceable modules;
- ``qwen2_5_vl_family.py``, ``mistral3_family.py``: their example calls, config sections and
  image pipelines;
- ``genai_config.py``, ``processor_config.py``: the two configs;
- ``verify.py``: the vision graph checked against transformers before publishing.
"""

from __future__ import annotations

from .export import export_vlm
from .families import is_vision_language

__all__ = ["export_vlm", "is_vision_language"]
