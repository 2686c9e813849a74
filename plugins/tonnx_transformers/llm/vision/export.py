"""``export_vlm``: a transformers vision-language folder -> a folder onnxruntime-genai runs.

The folder holds three graphs and what genai's multimodal processor reads:

- ``vision.onnx``: the vision encoder, in float32 whatever ``--precision`` says (why: it
  runs once per image, so its weights are a small part of the time of an answer, and its
  linear layers are not all ``MatMul``-shaped; int4 there would move the image features
  by the quantization noise for little gain. onnxruntime-genai's own Qwen2.5-VL and
  Qwen3-VL recipes keep it float32 too);
- ``embedding.onnx``: the token table with the image features put in place (float32);
- ``model.onnx``: the decoder on ``inputs_embeds``, at ``--precision`` (int4 / int8 as
  export-llm writes a text decoder: ``MatMulNBits`` for its linear layers);
- ``genai_config.json`` with its ``vision`` and ``embedding`` sections,
  ``processor_config.json`` (onnxruntime-extensions' image pipeline, from the source's
  ``preprocessor_config.json``) and the tokenizer files.

The model is loaded in memory by transformers (its weights are not streamed from the
safetensors files as a text decoder's are).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .. import folder as _folder
from .. import precision as _precision
from .. import runtime as _runtime
from ..export import LLMExport, staged
from ..tokenizer_check import check_genai_tokenizer, check_tokenizer_option
from . import families

#: precisions written for the decoder (the vision encoder and the embedding stay float32)
PRECISIONS = ("fp32", "int8", "int4")


def export_vlm(source: Any, out: str | os.PathLike, *, precision: str = "fp32", block_size: int | None = None,
               verify: bool = True, tokenizer: str | bool | None = None, progress: bool | None = False,
               runtime: str = "onnxruntime", context_length: int | None = None) -> LLMExport:
    """Exports a vision-language model folder to ``out`` (see the module's docstring);
    the options mean what they mean for :func:`~tonnx_transformers.llm.export.export_llm`."""
    from tonnx import UnsupportedError

    if precision not in PRECISIONS:
        raise UnsupportedError(
            f"--precision {precision} for a vision-language model: export-llm writes its decoder "
            f"in {', '.join(PRECISIONS)} (the vision encoder in float32).")
    spec = _precision.check_precision(precision, block_size)
    _runtime.check_runtime(runtime, precision)
    tokenizer = check_tokenizer_option(tokenizer)
    source = os.fspath(source)
    family = families.of_folder(source)
    real = _folder.resolve_output(os.fspath(out), sources=[source, tokenizer or None])
    with staged(real, progress=progress) as stage:
        stage.phase("load")
        model = family.load(source)
        stage.phase("export")
        graphs, plan = _export_graphs(family, model, stage.path, spec, block_size, runtime,
                                      context_length or family.context_length(model.config))
        stage.phase("config")
        config = family.genai_config(model, graphs, context_length or family.context_length(model.config))
        _write_json(stage.path, "genai_config.json", config)
        _write_json(stage.path, "processor_config.json", family.processor_config(source))
        if tokenizer is not False:
            folder = tokenizer or source
            copied = _folder.copy_tokenizer(folder, stage.path)
            check_genai_tokenizer(stage.path, copied, folder)
        check = None
        if verify:
            stage.phase("verify")
            check = family.verify(stage.path, model, plan)
        files = stage.publish()
    return LLMExport(out=os.fspath(out), files=files, streamed=False, seconds=stage.seconds(), check=check)


def _export_graphs(family: Any, model: Any, staging: str, spec: Any, block_size: int | None, runtime: str,
                   context: int) -> tuple[dict, Any]:
    """The three graphs written into ``staging`` ({"vision"|"embedding"|"decoder": ModelProto})
    and the decoder's QuantPlan (None in float32)."""
    import tonnx

    plain = _runtime.to_onnx_options(runtime, [], context)
    graphs = {}
    for part in ("vision", "embedding"):
        module, kwargs, dynamic = family.part(part, model)
        program = tonnx.export_program(module, kwargs=kwargs, dynamic_shapes=dynamic, dispatcher=plain["dispatcher"])
        graphs[part] = tonnx.convert(program, filename=os.path.join(staging, f"{part}.onnx"), external_data=True,
                                     **plain)
        _runtime.check_portable(runtime, graphs[part])
    graphs["decoder"], plan = _export_decoder(tonnx, family, model, staging, spec, block_size, runtime, context)
    return graphs, plan


def _export_decoder(tonnx: Any, family: Any, model: Any, staging: str, spec: Any, block_size: int | None,
                    runtime: str, context: int) -> tuple[Any, Any]:
    """``model.onnx``: the decoder step, its linear layers quantized at int4 / int8; and the
    QuantPlan (None in float32)."""
    from types import SimpleNamespace

    from ..traced_attention import attention_as_one_op, restore_attention

    module, kwargs, dynamic = family.part("decoder", model)
    src = SimpleNamespace(model=module, weights=[], aliases={}, stacked={})
    weights, packs, plan = _precision.export_options(spec, src, block_size)
    options = _runtime.to_onnx_options(runtime, packs, context)
    with attention_as_one_op():
        program = tonnx.export_program(module, kwargs=kwargs, dynamic_shapes=dynamic, dispatcher=options["dispatcher"])
    restore_attention(program)
    onx = tonnx.convert(program, filename=os.path.join(staging, families.DECODER_FILE), external_data=True,
                        weights=weights, **options)
    _runtime.check_portable(runtime, onx)
    if plan is not None and not plan.rewritten:
        raise tonnx.UnsupportedError(f"--precision {spec.name}: no linear layer of the decoder was quantized.")
    return onx, plan


def _write_json(folder: str, name: str, value: dict) -> None:
    with open(os.path.join(folder, name), "w") as f:
        json.dump(value, f, indent=4)
        f.write("\n")
