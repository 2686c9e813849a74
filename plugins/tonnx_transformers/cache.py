"""transformers' cache classes as pytree nodes, registered once per process.

Without a registration, ``torch.export`` stops at the cache argument with ``UserError: It
looks like one of the inputs with type <class 'transformers.cache_utils.DynamicCache'> is
not supported or pytree-flattenable``. The leaves are ``[key_0, value_0, key_1, ...]`` keyed
``"0.key"``, ``"0.value"``, ... so tonnx names them ``past_key_values.0.key`` (inputs) and
``present.0.key`` (outputs), as optimum and onnxruntime-genai do. A layer is rebuilt by
assigning its key and value tensors: transformers' own ``register_dynamic_cache_export_support``
rebuilds it through ``torch.tensor([])`` and ``torch.cat``, which puts a lifted constant in the
graph (torch.onnx then fails with ``SpecViolationError: Constant tensor lifted_tensor_8 is not
in the constants dictionary``) and names the leaves ``key_cache.0``.

Why register once and never remove, rather than register and remove around every export
(as tonnx's core did before this pack) or flatten the cache at tonnx's border:

- With ``optree`` installed, ``torch.utils._pytree.register_pytree_node`` mirrors every
  registration into the C++ registry, and torch offers no public way to remove it there:
  the old per-export removal cleared the Python entry only, so the second export failed with
  ``PyTree type ... is already registered in namespace 'torch'``. A registration made once
  through the public function keeps both registries in agreement for the whole process.
- Global state flipped around every export is seen by every other thread, and the program
  an export returns (``ep.module()``) needs the registration when it is called later.
- Flattening at the border (a wrapper taking the flat tensors) would change the program's
  signature, the parameters' names and ``dynamic_shapes`` for every user of
  ``tonnx.export_program``, and would not cover a cache the model creates and returns.

It coexists with transformers' own registration: called after ours,
``register_dynamic_cache_export_support`` sees the class registered and returns (it catches
that error); called before, its registration stays: for the duration of tonnx's export
patches only the Python entry (``SUPPORTED_NODES[cls]``, which torch.export reads) holds
ours, and the very object it held is put back on exit. The C++ registry is never touched
then. A ``DynamicCache`` holding another kind of layer (a hybrid model's linear-attention layer)
cannot be flattened: its flatten raises a ``TypeError`` naming the layer, as transformers'
does.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any


def _layer_classes():
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    return DynamicLayer, DynamicSlidingWindowLayer


def _flatten_dynamic(cache) -> tuple[list, Any]:
    children, context = _flatten_dynamic_with_keys(cache)
    return [c for _, c in children], context


def _flatten_dynamic_with_keys(cache) -> tuple[list, Any]:
    from torch.utils._pytree import MappingKey

    dynamic, sliding = _layer_classes()
    children: list = []
    layout: list = []
    for i, layer in enumerate(cache.layers):
        if type(layer) not in (dynamic, sliding):
            raise TypeError(
                f"tonnx can flatten a DynamicCache made of DynamicLayer and "
                f"DynamicSlidingWindowLayer only; layer {i} is a {type(layer).__name__}."
            )
        window = getattr(layer, "sliding_window", None)
        filled = layer.keys is not None and layer.is_initialized
        layout.append((window, filled))
        if filled:
            children.append((MappingKey(f"{i}.key"), layer.keys))
            children.append((MappingKey(f"{i}.value"), layer.values))
    return children, tuple(layout)


def _unflatten_dynamic(values, context):
    """Rebuilds the cache by assignment (no ``torch.tensor([])``, no ``torch.cat``)."""
    from transformers.cache_utils import Cache, DynamicCache

    dynamic, sliding = _layer_classes()
    values = list(values)
    layers = []
    for window, filled in context:
        layer = dynamic() if window is None else sliding(sliding_window=window)
        if filled:
            layer.keys, layer.values = values.pop(0), values.pop(0)
            layer.dtype, layer.device = layer.keys.dtype, layer.keys.device
            layer.is_initialized = True
            if window is not None:
                layer.cumulative_length = layer.keys.shape[-2]
        layers.append(layer)
    cache = DynamicCache.__new__(DynamicCache)
    if layers:
        Cache.__init__(cache, layers=layers)
    else:
        Cache.__init__(cache, layer_class_to_replicate=dynamic)
    return cache


def _flatten_encoder_decoder(cache) -> tuple[list, Any]:
    return [cache.self_attention_cache, cache.cross_attention_cache], None


def _flatten_encoder_decoder_with_keys(cache) -> tuple[list, Any]:
    from torch.utils._pytree import MappingKey

    children = [
        (MappingKey("self_attention"), cache.self_attention_cache),
        (MappingKey("cross_attention"), cache.cross_attention_cache),
    ]
    return children, None


def _unflatten_encoder_decoder(values, context):
    from transformers.cache_utils import EncoderDecoderCache

    return EncoderDecoderCache(*values)


def _registrations() -> list[tuple[type, Any, Any, Any]]:
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache

    return [
        (DynamicCache, _flatten_dynamic, _unflatten_dynamic, _flatten_dynamic_with_keys),
        (
            EncoderDecoderCache,
            _flatten_encoder_decoder,
            _unflatten_encoder_decoder,
            _flatten_encoder_decoder_with_keys,
        ),
    ]


def _register(cls, flatten, unflatten, with_keys) -> None:
    """The process-wide registration, through torch's public function (both registries)."""
    from torch.utils import _pytree

    _pytree.register_pytree_node(
        cls,
        flatten,
        unflatten,
        serialized_type_name=f"{cls.__module__}.{cls.__name__}",
        flatten_with_keys_fn=with_keys,
    )


@contextlib.contextmanager
def cache_nodes() -> Iterator[None]:
    """Within the block, the cache classes flatten as described in the module docstring.

    Registers them on first use (for the rest of the process); a registration made by
    someone else before that is replaced in the Python registry for the block only.
    Nested use is a no-op; without ``transformers.cache_utils`` imported, it does nothing.
    """
    if "transformers.cache_utils" not in sys.modules:
        yield
        return
    from torch.utils import _pytree

    swapped: list[tuple[type, Any]] = []
    try:
        with _pytree._NODE_REGISTRY_LOCK:
            for cls, flatten, unflatten, with_keys in _registrations():
                theirs = _pytree.SUPPORTED_NODES.get(cls)
                if theirs is None:
                    _register(cls, flatten, unflatten, with_keys)
                elif theirs.flatten_fn is not flatten:
                    ours = theirs._replace(
                        flatten_fn=flatten, unflatten_fn=unflatten, flatten_with_keys_fn=with_keys
                    )
                    _pytree.SUPPORTED_NODES[cls] = ours
                    swapped.append((cls, theirs))
        yield
    finally:
        with _pytree._NODE_REGISTRY_LOCK:
            for cls, theirs in reversed(swapped):
                _pytree.SUPPORTED_NODES[cls] = theirs
