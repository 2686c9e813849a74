"""``export_whisper``: a Whisper folder or model -> a folder onnxruntime-genai runs from audio.

The folder: ``encoder.onnx`` and ``decoder.onnx`` with their ``.data`` files,
``genai_config.json`` (model type ``whisper``), ``audio_processor_config.json`` (the
feature extraction onnxruntime-genai's processor runs on an audio file), the source's
``preprocessor_config.json`` and tokenizer files. Written beside OUT, checked, moved in
(``llm/folder.py``), as for causal LMs.

Precision: ``fp32``; ``int8``/``int4`` quantize the **decoder**'s linear layers to
``MatMulNBits`` as for causal LMs (``llm/quantize.py``: self- and cross-attention
projections, MLP, the head; the embedding table stays float32). The **encoder stays
float32**: it runs once per 30 s of audio where the decoder runs once per token, and its
output is every later step's cross-attention input, so its quantization noise reaches
every token while saving little time (measured: docs/llm-export.md, Whisper). The cross
keys and values, computed in the encoder graph by the decoder layers' ``k_proj``/``v_proj``,
stay float32 with it. ``fp16`` is refused (not checked here).
"""

from __future__ import annotations

import copy
import os
import shutil
from typing import Any

from tonnx import UnsupportedError

from .. import folder as _folder
from .. import precision as _precision
from .. import runtime as _runtime
from ..export import LLMExport, staged
from ..tokenizer_check import check_genai_tokenizer, check_tokenizer_option
from . import whisper_config, whisper_steps
from .whisper_source import PROCESSOR_FILES, load_whisper

PRECISIONS = ("fp32", "int8", "int4")


def export_whisper(source: Any, out: str | os.PathLike, *, precision: str = "fp32",
                   block_size: int | None = None, verify: bool = True, tokenizer: str | bool | None = None,
                   progress: bool | None = False, runtime: str = "onnxruntime",
                   context_length: int | None = None) -> LLMExport:
    """Exports a ``WhisperForConditionalGeneration`` (folder or model) to ``out``; the options
    are :func:`~..export.export_llm`'s. ``context_length``: the longest token sequence
    (default and largest: the config's ``max_target_positions``)."""
    spec = _check_options(precision, block_size, runtime)
    tokenizer = check_tokenizer_option(tokenizer)
    folder = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    out = os.fspath(out)
    real = _folder.resolve_output(out, sources=[folder, tokenizer or None])
    with staged(real, progress=progress) as stage:
        stage.phase("load")
        src = load_whisper(source, precision=precision, tokenizer=tokenizer or None)
        context = _context(src.config, context_length)
        stage.phase("export")
        files = {name: os.path.join(stage.path, name) for name in (whisper_steps.ENCODER_FILE, whisper_steps.DECODER_FILE)}
        encoder, decoder, plan = _export(src, files, spec, block_size, runtime, context)
        stage.phase("config")
        feature_folder = folder or src.tokenizer_folder
        whisper_config.write_json(stage.path, "genai_config.json", whisper_config.genai_config(
            encoder, decoder, src.config, src.generation_config, context=context))
        whisper_config.write_json(stage.path, "audio_processor_config.json",
                                  whisper_config.audio_processor_config(feature_folder, src.config))
        _copy(feature_folder, PROCESSOR_FILES, stage.path)
        if tokenizer is not False:
            copied = _folder.copy_tokenizer(src.tokenizer_folder, stage.path)
            check_genai_tokenizer(stage.path, copied, src.tokenizer_folder)
        check = None
        if verify:
            stage.phase("verify")
            check = _verify(files, src, spec, plan)
        written = stage.publish()
    return LLMExport(out=out, files=written, streamed=bool(src.weights), seconds=stage.seconds(), check=check)


def _check_options(precision: str, block_size: int | None, runtime: str) -> Any:
    spec = _precision.check_precision(precision, block_size)
    if precision not in PRECISIONS:
        raise UnsupportedError(
            f"--precision {precision} for Whisper: export-llm writes {', '.join(PRECISIONS)} "
            f"Whisper folders (a float16 one is not checked here); use fp32 or int4."
        )
    _runtime.check_runtime(runtime, precision)
    return spec


def _context(config: Any, context_length: int | None) -> int:
    """The folder's longest token sequence: the decoder has ``max_target_positions`` positions."""
    limit = config.max_target_positions
    if context_length is None:
        return limit
    if not isinstance(context_length, int) or not 2 <= context_length <= limit:
        raise UnsupportedError(
            f"context_length={context_length!r}: Whisper's decoder has {limit} positions "
            f"(max_target_positions); give an int from 2 to {limit}."
        )
    return context_length


def _export(src: Any, files: dict[str, str], spec: Any, block_size: int | None, runtime: str,
            context: int) -> tuple:
    """(encoder, decoder ``onnx.ModelProto``s written to ``files``, the QuantPlan or None)."""
    import torch

    import tonnx
    from tonnx.toolkit import SafetensorsWeights

    from ..traced_attention import attention_as_one_op, restore_attention

    device = "meta" if src.weights else "cpu"
    float_weights = SafetensorsWeights(src.weights, src.aliases, cast_floats=True) if src.weights else None
    decoder_weights, packs, plan = _precision.export_options(spec, src, block_size)
    graphs = []
    for step, call, weights, extra in (
        (whisper_steps.WhisperEncoderStep, whisper_steps.encoder_call, float_weights, []),
        (whisper_steps.WhisperDecoderStep, whisper_steps.decoder_call, decoder_weights, packs),
    ):
        module = step(src.model)
        arguments = call(src.config, device=device, dtype=torch.float32)
        options = _runtime.to_onnx_options(runtime, extra, context)
        with attention_as_one_op():
            program = tonnx.export_program(module, arguments.get("args", ()), arguments.get("kwargs"),
                                           dynamic_shapes=arguments["dynamic_shapes"],
                                           dispatcher=options["dispatcher"])
        restore_attention(program)
        path = files[whisper_steps.ENCODER_FILE if step is whisper_steps.WhisperEncoderStep else whisper_steps.DECODER_FILE]
        onx = tonnx.convert(program, filename=path, external_data=True, weights=weights,
                            input_names=arguments["input_names"], output_names=arguments["output_names"], **options)
        _runtime.check_portable(runtime, onx)
        graphs.append(onx)
    if plan is not None and not plan.rewritten:
        raise UnsupportedError(f"--precision {spec.name}: no linear layer of the Whisper decoder became "
                               f"MatMulNBits; the folder is not written.")
    return graphs[0], graphs[1], plan


def _copy(folder: str | None, names: tuple[str, ...], into: str) -> list[str]:
    copied = []
    for name in names:
        path = os.path.join(folder, name) if folder else None
        if path and os.path.isfile(path):
            shutil.copyfile(path, os.path.join(into, name))
            copied.append(name)
    return copied


def _verify(files: dict[str, str], src: Any, spec: Any, plan: Any) -> Any:
    from .whisper_verify import check_whisper

    encoder, decoder = files[whisper_steps.ENCODER_FILE], files[whisper_steps.DECODER_FILE]
    reference = src.reference()
    if plan is None:
        return check_whisper(encoder, decoder, reference, atol=spec.atol, rtol=spec.rtol)
    from ..quantized_reference import float_kernels

    if reference is src.model:  # a model given as an object is the user's: quantize a copy
        reference = copy.deepcopy(reference)

    # int8 / int4: transformers holds the decoder's quantized weights, the graph computes in float32
    with float_kernels(decoder) as checked:
        return check_whisper(encoder, checked, quantized_decoder(reference, plan), atol=spec.atol,
                             rtol=spec.rtol, against=f"transformers' generate() with the folder's "
                             f"int{plan.bits} decoder weights, without suppress_tokens")


def quantized_decoder(model: Any, plan: Any) -> Any:
    """``model`` whose decoder linear layers hold the folder's quantized weights: every
    ``nn.Linear`` of the decoder step but the cross ``k_proj``/``v_proj`` (the encoder
    graph's, float32), and ``proj_out``. The embedding tied to ``proj_out`` reads the head's
    quantized rows when the folder gathers them (``plan.gathered``: GatherBlockQuantized),
    else it keeps its float32 table."""
    from ..quantized_reference import quantized_reference

    embedding = model.model.decoder.embed_tokens
    tied = model.proj_out.weight is embedding.weight
    for name, module in model.model.decoder.named_modules():
        if not name.endswith(("encoder_attn.k_proj", "encoder_attn.v_proj")) and not list(module.children()):
            quantized_reference(module, plan)
    quantized_reference(model.proj_out, plan)
    if tied and getattr(plan, "gathered", None):  # the decoder's one table gathered at input ids
        embedding.weight = model.proj_out.weight
    return model
