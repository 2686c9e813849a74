"""The decoder traced with its first two layers, the others copied from the second.

torch.export's cost is per traced op (fake tensors and symbolic shapes through the
dispatcher): ~0.7 s of CPU per layer of a Qwen3-0.6B shape, 23 s of its 28 layers. The
decoder layers run the same code, so export-llm traces the model with its first two layers
(the ModuleList cut to two, ``num_hidden_layers`` 2, for the block), checks in that program
that layer 1 is layer 0's computation (:mod:`.layer_graph`) and writes the program of every
layer by copying layer 1 (:mod:`.layer_replicate`): the same ONNX graph as the whole trace.

Layers 2 and on are not traced, so they must be layer 1's code: each layer's modules (their
types, the shapes of their weights, their plain attributes but ``layer_idx``) and the
config's per-layer lists (``layer_types``, ``mlp_layer_types``, ... any list of one entry per
layer) must be layer 1's. Where they are not (Gemma's sliding/full alternation, MoE blocks on
some layers, a layer without rotary), or the two traced layers differ, the model is traced
whole as before, and :attr:`Trace.note` says why.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tonnx import TonnxError

from .layer_graph import LayersDiffer, layer_template

#: the number of layers traced: layer 0 (after the embedding), layer 1 (the template)
TRACED = 2


@dataclass
class Trace:
    """The program of the whole model and how it was made."""

    program: Any
    #: e.g. "2 of 28 decoder layers traced, 26 copied" or "traced whole: <why>"
    note: str


def export_program(tonnx: Any, model: Any, config: Any, *, device: str, dispatcher: Any) -> Trace:
    """The ExportedProgram of ``model``'s generation step (``inputs.example_call``)."""
    from .inputs import example_call

    kwargs, dynamic = example_call(model, config, device=device)
    found = decoder_layers(model, config)
    reason = found if isinstance(found, str) else _differing_layer(found[1], config)
    if reason is None:
        path, layers = found
        try:
            program = _copied(tonnx, model, config, path, layers, kwargs, device, dispatcher)
            return Trace(program, f"{TRACED} of {len(layers)} decoder layers traced, "
                                  f"{len(layers) - TRACED} copied")
        except LayersDiffer as e:
            reason = str(e)
        except TonnxError as e:  # the whole trace gives the error the user would get without the copy
            reason = f"the trace of {TRACED} layers failed ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
    program = tonnx.export_program(model, kwargs=kwargs, dynamic_shapes=dynamic, dispatcher=dispatcher)
    return Trace(program, f"traced whole: {reason}")


def decoder_layers(model: Any, config: Any) -> tuple[str, Any] | str:
    """(path, ModuleList) of the decoder layers, or why there is nothing to copy."""
    import torch

    count = getattr(config, "num_hidden_layers", None)
    if not isinstance(count, int) or count <= TRACED:
        return f"{count} decoder layers"
    lists = [(name, m) for name, m in model.named_modules()
             if isinstance(m, torch.nn.ModuleList) and len(m) == count and name]
    if len(lists) != 1:
        return f"{len(lists)} ModuleLists of {count} modules (num_hidden_layers), not one"
    return lists[0]


def _differing_layer(layers: Any, config: Any) -> str | None:
    """Why some layer is not layer 1's code (modules, per-layer config entries), or None."""
    expected = module_signature(layers[1])
    for i, layer in enumerate(layers):
        if i != 1 and module_signature(layer) != expected:
            return f"layer {i}'s modules differ from layer 1's ({_first_difference(module_signature(layer), expected)})"
    count = len(layers)
    for name, value in sorted(vars(config).items()):
        if isinstance(value, (list, tuple)) and len(value) == count and any(v != value[1] for v in value):
            return f"config.{name} differs between layers ({value[0]!r}, {value[1]!r}, ...)"
    return None


def module_signature(layer: Any) -> list:
    """What decides a layer's graph beside its inputs: per submodule, its type, its weights'
    shapes and dtypes, and its plain attributes (``layer_idx`` excepted: the cache index)."""
    signature = []
    for name, module in layer.named_modules():
        attrs = sorted((k, _plain(v)) for k, v in vars(module).items()
                       if not k.startswith("_") and k != "layer_idx" and _plain(v) is not None)
        tensors = [(k, tuple(t.shape), t.dtype) for k, t in [*module._parameters.items(), *module._buffers.items()]
                   if t is not None]
        signature.append((name, type(module).__qualname__, attrs, tensors))
    return signature


def _plain(value: Any) -> str | None:
    """A comparable form of a plain attribute (numbers, strings, functions, tuples of them)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (list, tuple)) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return repr(value)
    if callable(value) and hasattr(value, "__qualname__") and not hasattr(value, "forward"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    return None


def _first_difference(got: list, expected: list) -> str:
    """The first submodule whose type, attributes or weights differ, with what differs."""
    for a, b in zip(got, expected):
        if a != b:
            parts = [f"{x} vs {y}" for x, y in ((a[1], b[1]), (sorted(set(a[2]) - set(b[2])), sorted(set(b[2]) - set(a[2]))),
                                                (a[3], b[3])) if x != y]
            return f"{a[0] or 'the layer'}: {'; '.join(parts)}"[:300]
    return f"{len(got)} submodules vs {len(expected)}"


def _copied(tonnx, model, config, path, layers, kwargs, device, dispatcher) -> Any:
    from .inputs import example_call
    from .layer_replicate import replicate

    with first_layers(model, config, path, TRACED), uncached_fake_dispatch():
        small, dynamic = example_call(model, config, device=device)
        program = tonnx.export_program(model, kwargs=small, dynamic_shapes=dynamic, dispatcher=dispatcher)
    template = layer_template(program, path)
    state = {**dict(model.named_parameters(remove_duplicate=False)),
             **dict(model.named_buffers(remove_duplicate=False))}
    with tonnx.export_patches(dispatcher=dispatcher):  # the cache's pytree, as when traced
        return replicate(program, template, len(layers), kwargs, state)


def uncached_fake_dispatch() -> Any:
    """Within: torch.export's fake tensors dispatch without their cache (restored on leaving).

    The cache pays for itself when an op meets the same shapes many times; in a decoder's
    trace under dynamic shapes almost every entry is new, and making one builds and checks
    a symbolic output (``_make_cache_entry``). Measured on the 2 layers of a Qwen3-0.6B shape:
    4.0-4.3 s of CPU with the cache, 2.4-2.7 s without, the same program (graph code,
    signature, range constraints and every node's value identical), and the same folders
    byte for byte (Llama, Qwen3, Phi-3). Not used for a whole trace: there Gemma-2's and
    Qwen3-MoE's graphs kept their ops but some FX names (hence ONNX names) changed."""
    import torch._dynamo.config

    return torch._dynamo.config.patch(fake_tensor_cache_enabled=False)


@contextlib.contextmanager
def first_layers(model: Any, config: Any, path: str, count: int) -> Iterator[None]:
    """Within: the ModuleList at ``path`` holds its first ``count`` layers and the configs
    say ``num_hidden_layers = count``; both restored on leaving."""
    import torch

    owner, _, attr = path.rpartition(".")
    parent = model.get_submodule(owner) if owner else model
    layers = getattr(parent, attr)
    configs = [c for c in {id(config): config, id(model.config): model.config}.values()]
    saved = [c.num_hidden_layers for c in configs]
    parent._modules[attr] = torch.nn.ModuleList(list(layers)[:count])
    try:
        for c in configs:
            c.num_hidden_layers = count
        yield
    finally:
        parent._modules[attr] = layers
        for c, n in zip(configs, saved):
            c.num_hidden_layers = n
