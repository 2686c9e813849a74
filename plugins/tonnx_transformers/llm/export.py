"""``export_llm``: a transformers causal LM -> a folder onnxruntime-genai runs."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import folder as _folder
from . import precision as _precision
from . import runtime as _runtime
from .genai_config import context_length as config_context_length
from .inputs import cache_geometry, check_cache_window
from .source import callers_mode_kept, in_memory, load_source
from .tokenizer_check import check_genai_tokenizer, check_tokenizer_option

MODEL_FILE = "model.onnx"


@dataclass
class LLMExport:
    """What :func:`export_llm` wrote and measured."""

    out: str
    files: list[str]
    #: weights streamed from safetensors (False: loaded in memory by transformers)
    streamed: bool
    seconds: dict[str, float] = field(default_factory=dict)
    check: Any = None
    #: how the model was traced: "2 of 28 decoder layers traced, 26 copied" or "traced whole:
    #: <why>" (layer_reuse.py)
    trace: str = ""


class _Phases:
    """The phase shown by tonnx's progress line (``tonnx.toolkit.Progress``)."""

    current: str | None = None

    def node_progress(self) -> tuple[int, int]:
        return 0, 0


class Stage:
    """An export's staging folder (``path``) and its phases: :meth:`phase` names the phase
    on the progress line and starts its clock, :meth:`publish` moves the folder into OUT."""

    def __init__(self, staging: Any, phases: _Phases):
        self.path = staging.path
        self._staging, self._phases = staging, phases
        self._starts: dict[str, float] = {}
        self._end: float | None = None

    def phase(self, name: str) -> None:
        self._phases.current = name
        self._starts[name] = time.perf_counter()

    def publish(self) -> list[str]:
        """Publishes the folder (phase "publish"); the names of the files written."""
        self.phase("publish")
        files = sorted(os.listdir(self.path))
        self._staging.publish()
        return files

    def seconds(self) -> dict[str, float]:
        """Each phase's wall seconds, the last one up to the end of the ``staged`` block."""
        ends = [*list(self._starts.values())[1:], self._end or time.perf_counter()]
        return {k: e - b for (k, b), e in zip(self._starts.items(), ends)}


@contextlib.contextmanager
def staged(real: str, *, progress: bool | None) -> Iterator[Stage]:
    """``with staged(OUT, progress=...) as stage:`` the exporters' frame: the progress line
    and a :class:`~.folder.StagingFolder` beside ``real`` (removed unless published)."""
    from tonnx.toolkit import Progress

    phases = _Phases()
    with Progress(phases, enabled=progress), _folder.StagingFolder(real) as staging:
        stage = Stage(staging, phases)
        yield stage
    stage._end = time.perf_counter()


def export_llm(source: Any, out: str | os.PathLike, *, precision: str = "fp32",
               block_size: int | None = None, verify: bool = True, tokenizer: str | bool | None = None,
               progress: bool | None = False, runtime: str = "onnxruntime",
               context_length: int | None = None) -> LLMExport:
    """Exports a causal LM to a folder that ``onnxruntime_genai.Model(out)`` opens.

    - ``source``: a transformers model folder (``config.json``, ``*.safetensors``, tokenizer
      files), ``"MODULE_OR_FILE:CALLABLE"`` returning a model, or the model itself. A
      folder's weights are streamed from its safetensors files into ``model.onnx.data``
      (the model is built on ``meta``: no copy of the weights in memory during the export).
    - ``out``: the folder written: ``model.onnx`` and ``model.onnx.data``, ``genai_config.json``
      and the tokenizer files. Written beside it, checked, then moved in; what else OUT
      holds stays (folder.py). A symlink is written through; an empty path is refused.
    - ``precision``: ``"fp32"``, ``"fp16"``, ``"int8"`` or ``"int4"`` (``"bf16"`` is refused:
      onnxruntime's CPU EP lacks its kernels); see ``precision.py``. int8 and int4 quantize
      the linear layers to ``MatMulNBits`` while the weights are written.
    - ``block_size``: int8 and int4's quantization block along K (default 32).
    - ``verify``: before publishing, a greedy generation of 8 tokens in onnxruntime against
      transformers' ``generate(do_sample=False)`` (loads the folder's model once in memory;
      turn off for a model larger than memory). A mismatch raises ``GreedyCheckError``.
    - ``tokenizer``: the folder to copy tokenizer files from (default: the source folder;
      ``False``: none). The copied tokenizer must load in onnxruntime-genai and give back a
      string it encodes (``TokenizerError`` otherwise); none found is a ``NoTokenizerWarning``.
    - ``progress``: show the phase on stderr (None: when stderr is a terminal).
    - ``runtime``: ``"onnxruntime"``, or ``"onnx"``: the portable graph, standard domain
      only at opset 23 (Attention, RMSNormalization, RotaryEmbedding); see ``runtime.py``.
    - ``context_length``: the longest sequence the folder runs (default: the config's
      ``max_position_embeddings``; needed for models without one, e.g. BLOOM's ALiBi).
    """
    import tonnx

    from .vision import export_vlm, is_vision_language

    if is_vision_language(source):  # vision encoder, embedding and decoder: vision/export.py
        return export_vlm(source, out, precision=precision, block_size=block_size, verify=verify, tokenizer=tokenizer,
                          progress=progress, runtime=runtime, context_length=context_length)
    from .speech import speech_exporter

    if (speech := speech_exporter(source)) is not None:  # Whisper (encoder and decoder): speech/
        return speech(source, out, precision=precision, block_size=block_size, verify=verify, tokenizer=tokenizer,
                      progress=progress, runtime=runtime, context_length=context_length)
    spec = _precision.check_precision(precision, block_size)
    _runtime.check_runtime(runtime, precision)
    if context_length is not None and (not isinstance(context_length, int) or context_length < 2):
        raise tonnx.UnsupportedError(f"context_length={context_length!r}: give an int of 2 or more.")
    tokenizer = check_tokenizer_option(tokenizer)
    folders = [os.fspath(source) if isinstance(source, (str, os.PathLike)) else None, tokenizer or None]
    out = os.fspath(out)
    real = _folder.resolve_output(out, sources=folders)
    with staged(real, progress=progress) as stage, callers_mode_kept(source):
        stage.phase("load")
        src = load_source(source, precision=precision, tokenizer=tokenizer or None)
        cache_geometry(src.config)  # a model without a key/value cache is refused first
        check_cache_window(src.model, src.config)
        context = context_length or config_context_length(src.config)
        stage.phase("export")
        model_file = os.path.join(stage.path, MODEL_FILE)
        onx, plan, src, trace = _export(tonnx, src, model_file, spec, block_size, runtime, context)
        _runtime.check_portable(runtime, onx)
        stage.phase("config")
        _write_config(stage.path, onx, src, context)
        if tokenizer is not False:
            copied = _folder.copy_tokenizer(src.tokenizer_folder, stage.path)
            check_genai_tokenizer(stage.path, copied, src.tokenizer_folder)
        check = None
        if verify:
            stage.phase("verify")
            check = _verify(model_file, src, spec, plan)
        files = stage.publish()
    return LLMExport(out=out, files=files, streamed=bool(src.weights), seconds=stage.seconds(), check=check,
                     trace=trace)


def _export(tonnx: Any, src: Any, path: str, spec: Any, block_size: int | None, runtime: str,
            context: int) -> tuple:
    """(the ONNX model written to ``path``, the QuantPlan or None, the Source exported: a
    streamed one whose trace holds a constant made on ``meta`` is loaded in memory, how the
    model was traced: its first two decoder layers, the others copied, or whole)."""
    from .latent_cache import halved_cache
    from .layer_reuse import export_program
    from .traced_attention import attention_as_one_op, restore_attention

    streamed = bool(src.weights)
    src.model.config.use_cache = True
    weights, packs, plan = _precision.export_options(spec, src, block_size)
    options = _runtime.to_onnx_options(runtime, packs, context)
    with attention_as_one_op(), halved_cache(src.model, src.config):
        trace = export_program(tonnx, src.model, src.config, device="meta" if streamed else "cpu",
                               dispatcher=options["dispatcher"])
    program = trace.program
    if streamed and _constants_on_meta(program):
        # Falcon indexes with a list (qkv[..., [-2]]): the index tensor the trace keeps was
        # made on the device of the weights, meta, so its value is lost; traced on the CPU it
        # holds it. Only then is the model loaded in memory.
        return _export(tonnx, in_memory(src), path, spec, block_size, runtime, context)
    restore_attention(program)
    onx = tonnx.convert(program, filename=path, external_data=True, weights=weights, **options)
    if plan is not None and not plan.rewritten:
        from tonnx import UnsupportedError

        raise UnsupportedError(
            f"--precision {spec.name}: no linear layer of {type(src.model).__name__} is a MatMul or Gemm "
            f"with a 2-D float32 weight, so nothing would be quantized; the folder is not written."
        )
    return onx, plan, src, trace.note


def _constants_on_meta(program: Any) -> list[str]:
    """The names of ``program``'s tensor constants whose values were lost: made on ``meta``
    and not empty (DeepSeek's empty ``[0]`` tensors hold nothing to lose)."""
    return [name for name, value in program.constants.items()
            if getattr(value, "is_meta", False) and value.numel() > 0]


def _write_config(staging: str, onx: Any, src: Any, context: int) -> None:
    from .genai_config import genai_config

    config = genai_config(onx, src.config, src.generation_config, filename=MODEL_FILE, context=context)
    with open(os.path.join(staging, "genai_config.json"), "w") as f:
        json.dump(config, f, indent=4)
        f.write("\n")


def _verify(model_file: str, src: Any, spec: Any, plan: Any) -> Any:
    from .verify import check_greedy

    reference = src.reference()
    if plan is not None and src.callers_model:  # quantized below: the caller's weights stay theirs
        import copy

        reference = copy.deepcopy(reference)
    if plan is None:
        return check_greedy(model_file, reference, src.config.vocab_size, atol=spec.atol,
                            rtol=spec.rtol)
    from .quantized_reference import float_kernels, quantized_reference

    # int8 / int4: the reference holds the folder's weights, the graph computes in float32
    with float_kernels(model_file) as checked:
        return check_greedy(checked, quantized_reference(reference, plan), src.config.vocab_size,
                            atol=spec.atol, rtol=spec.rtol,
                            against=f"transformers' generate() with the folder's int{plan.bits} weights")
