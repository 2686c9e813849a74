"""SOURCE -> the causal LM to export: a transformers folder built on ``meta``, or a callable.

A folder's model is built with its parameters on the ``meta`` device (no memory) and its
buffers on the CPU: the non-persistent ones (rotary ``inv_freq``, masks) are computed by the
model's constructor and are in no checkpoint, so they must hold data; the weights are read
from the folder's safetensors files one tensor at a time while the ONNX file is written
(``to_onnx(..., weights=...)``). A model one of whose tensors transformers builds from
several checkpoint tensors (the stacked experts of Mixtral, Qwen3-MoE) is streamed too: the
tensor is computed by transformers' own weight converter as it is written
(:mod:`.stacked_weights`). A bfloat16 or float16 checkpoint is read
into the float32 model (each tensor cast as it is read); with ``--precision fp16`` the model
is built in float16 and every floating tensor is cast to it as it is read.
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Container, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from tonnx import TonnxError, UnsupportedError

from .stacked_weights import stacked_tensors


class SourceError(TonnxError):
    """SOURCE is not a model folder or a callable returning a causal LM (exit code 2)."""

#: safetensors dtypes each precision reads: floating ones are cast to the model's dtype one
#: tensor at a time while streaming (bfloat16 and float16 are exact in float32; int8 and
#: int4 read float32 weights, quantized as they are written)
_READS = dict.fromkeys(("fp32", "fp16", "int8", "int4"),
                       {"F32", "BF16", "F16", "I64", "I32", "BOOL", "U8", "I8"})


@dataclass
class Source:
    """What the folder writer needs: the model, where its weights and tokenizer are."""

    model: Any
    config: Any
    generation_config: Any
    #: safetensors files streamed into the model file; empty when the weights are in memory
    weights: list[str] = field(default_factory=list)
    #: model tensor name -> checkpoint name, where they differ (tied, renamed)
    aliases: dict[str, str] = field(default_factory=dict)
    #: model tensor name -> how it is computed from several checkpoint tensors (stacked experts)
    stacked: dict[str, Any] = field(default_factory=dict)
    #: the folder the tokenizer files are copied from (None: no tokenizer files)
    tokenizer_folder: str | None = None
    #: what transformers runs for the greedy check (a loader: the folder is read only then)
    reference: Any = None
    #: the reference is the caller's own model object: a check that changes weights copies it
    callers_model: bool = False


def load_source(source: Any, *, precision: str, tokenizer: str | None = None) -> Source:
    """A folder path, ``MODULE_OR_FILE:CALLABLE`` or an ``nn.Module`` -> :class:`Source`."""
    import torch

    dtype = torch.float16 if precision == "fp16" else torch.float32
    if isinstance(source, torch.nn.Module):
        return _from_module(source, tokenizer, dtype)
    source = os.fspath(source)
    if os.path.isdir(source):
        return _from_folder(source, precision, tokenizer, dtype)
    if ":" in source and not os.path.exists(source):
        return _from_callable(source, tokenizer, dtype)
    raise SourceError(
        f"SOURCE {source!r} is neither a model folder (config.json and *.safetensors, as "
        f"save_pretrained writes) nor MODULE_OR_FILE:CALLABLE returning a model."
    )


def _from_folder(folder: str, precision: str, tokenizer: str | None, dtype: Any) -> Source:
    import torch
    import transformers

    if not os.path.isfile(os.path.join(folder, "config.json")):
        raise SourceError(f"{folder!r} has no config.json: give a folder save_pretrained wrote.")
    weights = safetensors_files(folder)
    config = transformers.AutoConfig.from_pretrained(folder)
    _check_causal_lm(config, folder)
    stored, files = _check_dtypes(weights, precision)
    with parameters_on_meta():
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.eval()
    _buffers_to_meta(model, stored)
    if getattr(model.config, "_experts_implementation", "eager") != "eager":
        # grouped_mm branches on the device (histc of floats on the CPU, of ints elsewhere):
        # on 'meta' it traces another graph than the model computes. The pack's eager loop
        # over every expert traces alike on any device (where no fused op replaces it)
        model.set_experts_implementation("eager")
    stacked = stacked_tensors(model, stored)
    aliases = checkpoint_names(model, stored, set(stacked))
    check_shapes(model, stored, files, aliases or {}, folder)

    def load():
        return transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()

    streamed = Source(
        model=model, config=config, generation_config=_generation_config(folder, model),
        weights=weights, aliases=aliases, stacked=stacked, tokenizer_folder=tokenizer or folder,
        reference=load,
    )
    # a tensor no checkpoint name or converter gives: transformers loads it
    return in_memory(streamed) if aliases is None else streamed


def safetensors_files(folder: str) -> list[str]:
    """The folder's ``*.safetensors`` files, sorted; none is an UnsupportedError (export-llm
    streams its weights from them)."""
    weights = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    if not weights:
        raise UnsupportedError(
            f"{folder!r} has no *.safetensors file: export-llm streams weights from safetensors "
            f"only. Convert the checkpoint (model.save_pretrained(folder) writes safetensors)."
        )
    return weights


def in_memory(src: Source) -> Source:
    """``src`` with its weights loaded by transformers instead of streamed: for a model whose
    ``meta`` build cannot be streamed (a tensor no checkpoint gives, a constant the trace
    made on ``meta``). Costs the float32 model in memory, as ``from_pretrained`` does."""
    reference = src.reference()
    model = _in_dtype(reference, src.model.dtype)
    return replace(src, model=model, weights=[], aliases={}, stacked={}, reference=lambda: reference)


def _in_dtype(model: Any, dtype: Any) -> Any:
    """The float32 model itself, or a copy whose floating parameters are in ``dtype`` (the
    float32 one stays the reference; buffers such as rotary ``inv_freq`` keep their dtype,
    as in a model transformers builds in ``dtype``)."""
    import copy

    import torch

    if dtype == torch.float32:
        return model
    copied = copy.deepcopy(model)
    for param in copied.parameters():
        if param.is_floating_point():
            param.data = param.data.to(dtype)
    return copied


def checkpoint_names(model: Any, stored: Container[str], stacked: Container[str] = frozenset()) -> dict[str, str] | None:
    """For each 'meta' tensor of the model not stored under its own name (nor ``stacked``:
    computed from several), the checkpoint tensor holding it; None when one has none.

    transformers 5 renames tensors when loading (GPT-NeoX's ``embed_out`` is the model's
    ``lm_head``) and saves a tied weight once; its ``revert_weight_conversion`` (what
    ``save_pretrained`` runs) gives the checkpoint's name of each model tensor, the same
    object for a rename (a converter's stacked experts come back as new tensors: those are
    :mod:`.stacked_weights`' job).
    """
    from transformers.core_model_loading import revert_weight_conversion

    state = model.state_dict(keep_vars=True)
    missing = {n for n, t in state.items() if n not in stored and n not in stacked and t.device.type == "meta"}
    if not missing:
        return {}
    names: dict[int, list[str]] = {}
    for name, tensor in state.items():
        names.setdefault(id(tensor), []).append(name)
    aliases = {}
    for stored_name, tensor in revert_weight_conversion(model, dict(state)).items():
        if stored_name in stored:
            aliases.update({n: stored_name for n in names.get(id(tensor), []) if n in missing})
    return aliases if set(aliases) == missing else None


def _from_callable(spec: str, tokenizer: str | None, dtype: Any) -> Source:
    from tonnx.toolkit import TargetError, import_module_or_file

    where, _, name = spec.rpartition(":")
    try:
        func = import_module_or_file(where)
    except TargetError as e:
        raise SourceError(f"SOURCE {spec!r}: {e}") from e
    for part in name.split("."):
        if not hasattr(func, part):
            raise SourceError(f"SOURCE {spec!r}: {where!r} has no attribute {name!r}.")
        func = getattr(func, part)
    if not callable(func):
        raise SourceError(f"SOURCE {spec!r} is not callable: it must return a causal LM.")
    return _from_module(func(), tokenizer, dtype)


def _from_module(model: Any, tokenizer: str | None, dtype: Any) -> Source:
    import torch

    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise SourceError(
            f"SOURCE gave a {type(model).__name__}: expected a transformers causal LM (an "
            f"nn.Module with a .config, e.g. AutoModelForCausalLM.from_config(...))."
        )
    if any(p.device.type == "meta" for p in model.parameters()):
        raise UnsupportedError(
            "SOURCE gave a model on the 'meta' device: give its folder instead, so that the "
            "weights are read from its safetensors files."
        )
    _check_causal_lm(model.config, type(model).__name__)
    folder = tokenizer or getattr(model.config, "_name_or_path", None) or getattr(model, "name_or_path", None)
    model.eval()
    return Source(
        model=_in_dtype(model, dtype), config=model.config, generation_config=model.generation_config,
        tokenizer_folder=folder if folder and os.path.isdir(folder) else None,
        reference=lambda: model, callers_model=True,
    )


@contextlib.contextmanager
def callers_mode_kept(source: Any) -> Iterator[None]:
    """A model given as an object is exported in eval mode (dropout off, as ``generate``
    runs it) and given back in the train/eval mode of each of its modules as it came."""
    import torch

    if not isinstance(source, torch.nn.Module):
        yield
        return
    modes = [(module, module.training) for module in source.modules()]
    try:
        yield
    finally:
        for module, training in modes:
            module.training = training


def _check_causal_lm(config: Any, where: str) -> None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise UnsupportedError(
            f"{where}: model_type {config.model_type!r} has no causal LM class in transformers "
            f"(AutoModelForCausalLM); export-llm writes decoder-only language models."
        )


def _check_dtypes(weights: list[str], precision: str) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
    """The checkpoint's tensor names and shapes, and the file holding each (the first);
    refuses a file safetensors cannot read, and a precision the tensors cannot be read at."""
    shapes: dict[str, tuple[int, ...]] = {}
    files: dict[str, str] = {}
    for path in weights:
        for key, shape, dtype in _header(path):
            shapes.setdefault(key, shape)
            files.setdefault(key, path)
            if dtype not in _READS[precision]:
                raise UnsupportedError(
                    f"{os.path.basename(path)} stores {key!r} as {dtype}: export-llm "
                    f"--precision {precision} reads {', '.join(sorted(_READS[precision]))} "
                    f"tensors."
                )
    return shapes, files


def _header(path: str) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, dtype) of each tensor of a safetensors file, or a :class:`SourceError`
    naming it (safetensors checks that the header's tensors cover the file: a truncated
    download is seen here)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(path, framework="pt") as f:
            return [(key, tuple(f.get_slice(key).get_shape()), f.get_slice(key).get_dtype())
                    for key in f.keys()]  # noqa: SIM118 - safe_open is not a mapping
    except (SafetensorError, OSError) as e:
        raise SourceError(
            f"{path!r} cannot be read as safetensors ({e}): the file is truncated or is not a "
            f"safetensors file. Download or save the checkpoint again."
        ) from e


def check_shapes(model: Any, stored: dict[str, tuple[int, ...]], files: dict[str, str],
                 aliases: dict[str, str], folder: str) -> None:
    """Each model tensor read from the checkpoint has the shape config.json gives it, or a
    :class:`SourceError` names the tensor, both shapes and the file."""
    for name, tensor in model.state_dict(keep_vars=True).items():
        stored_name = aliases.get(name, name)
        if tensor.device.type != "meta" or stored_name not in stored:
            continue
        if tuple(tensor.shape) != stored[stored_name]:
            raise SourceError(
                f"{folder!r}: config.json and the weights disagree: {stored_name!r} is "
                f"{tuple(tensor.shape)} from config.json but {stored[stored_name]} in "
                f"{os.path.basename(files[stored_name])}. Give the config.json saved with "
                f"these weights."
            )


def _buffers_to_meta(model: Any, stored: Container[str]) -> None:
    """Persistent buffers found in the checkpoint go to 'meta': they are read from it. A
    buffer may be stored under another name (``save_pretrained`` renames EXAONE-MoE's router
    bias ``mlp.gate.e_score_correction_bias`` to ``mlp.e_score_correction_bias``); left in
    memory beside 'meta' weights, it would stop the export (two devices)."""
    from transformers.core_model_loading import revert_weight_conversion

    state = model.state_dict(keep_vars=True)
    saved = {id(tensor): name for name, tensor in revert_weight_conversion(model, dict(state)).items()}
    for name, buffer in list(model.named_buffers()):
        if (name in stored or saved.get(id(buffer)) in stored) and buffer.device.type != "meta":
            owner, _, attr = name.rpartition(".")
            module = model.get_submodule(owner) if owner else model
            module._buffers[attr] = buffer.to("meta")


def _generation_config(folder: str, model: Any) -> Any:
    from transformers import GenerationConfig

    if os.path.isfile(os.path.join(folder, "generation_config.json")):
        return GenerationConfig.from_pretrained(folder)
    return model.generation_config


@contextlib.contextmanager
def parameters_on_meta() -> Iterator[None]:
    """Within: every parameter a module registers is moved to 'meta' (buffers stay).

    A parameter is created by its module's constructor (``torch.empty``: allocated, never
    written) and moved at once, before the module initializes it, so at most one is in
    memory. ``torch.device("meta")`` would put the buffers there too, and the non-persistent
    ones (rotary ``inv_freq``) are in no checkpoint.
    """
    import torch

    register = torch.nn.Module.register_parameter

    def on_meta(module, name, param):
        if param is not None and param.device.type != "meta":
            param = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    torch.nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register
