"""``tonnx export-llm``: a transformers causal LM -> a folder onnxruntime-genai runs.

- ``export.py``: :func:`export_llm`, the steps in order (load, export, config, tokenizer,
  greedy check, publish);
- ``source.py``: SOURCE (a folder, built on ``meta``, or a callable) -> the model;
- ``inputs.py``: the step-with-a-cache call it is exported with;
- ``precision.py``: fp32, fp16, int8, int4 (bf16 refused): what each changes in the export;
- ``quantize.py``: int8 / int4 linear layers as ``MatMulNBits``, quantized while written;
- ``genai_config.py``: ``genai_config.json`` from the graph's names and the model's config;
- ``verify.py``: greedy tokens in onnxruntime against transformers before publishing;
- ``folder.py``: the staging folder renamed to OUT, tokenizer files;
- ``command.py``: the ``tonnx export-llm`` command the pack contributes.
"""

from __future__ import annotations

from .export import LLMExport, export_llm
from .verify import GreedyCheckError

__all__ = ["GreedyCheckError", "LLMExport", "export_llm"]
