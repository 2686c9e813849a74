"""Export patches: what torch.export needs to trace ``transformers`` models.

Each patch says which error it avoids. All are applied for the duration of an export only
(``to_onnx`` applies them itself) and undone on exit, so eager torch code is unchanged:

- **Cache classes as pytree nodes** (``DynamicCache``, ``EncoderDecoderCache``): without it,
  ``torch.export`` stops at the cache argument with ``UserError: It looks like one of the
  inputs with type <class 'transformers.cache_utils.DynamicCache'> is not supported or
  pytree-flattenable``. transformers' own ``register_dynamic_cache_export_support`` is not
  used: its unflatten rebuilds each layer through ``torch.tensor([])`` and a ``torch.cat``,
  which puts a lifted constant in the graph (torch.onnx then fails with ``SpecViolationError:
  Constant tensor lifted_tensor_8 is not in the constants dictionary``). Here a layer is
  rebuilt by assigning its key and value tensors: no constant, no extra node. If another
  registration is active on entry, it is set aside and restored on exit.

The flattened leaves are ``[key_0, value_0, key_1, value_1, ...]`` keyed ``"0.key"``,
``"0.value"``, ... so tonnx names them ``past_key_values.0.key`` (inputs) and
``present.0.key`` (outputs), as optimum and onnxruntime-genai do.

- **Eager experts over every expert** (mixture-of-experts decoders configured with
  ``experts_implementation="eager"``): their experts forward loops over the experts that
  received tokens, ``for expert_idx in expert_hit``, a tensor whose length depends on the
  routing, and ``torch.export`` stops with ``GuardOnDataDependentSymNode: Could not guard on
  data-dependent expression Eq(u0, 0)``. During the block, ``"eager"`` in transformers'
  experts registry (``ALL_EXPERTS_FUNCTIONS``, through which every ``@use_experts_implementation``
  class dispatches) is the same loop over ``range(num_experts)``: each expert still runs on its
  own tokens only (a ``nonzero`` whose size the graph leaves free), so the numbers are eager's
  and so is the compute (the graph holds one expert block per expert and layer). An
  ``"eager"`` entry registered by someone else is left in place.
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


def _take_registration(cls) -> tuple | None:
    """Removes ``cls``'s pytree registration, returning what restores it."""
    from torch.utils import _pytree

    if cls not in _pytree.SUPPORTED_NODES:
        return None
    saved = (_pytree.SUPPORTED_NODES[cls], _pytree.SUPPORTED_SERIALIZED_TYPES.get(cls))
    _pytree._deregister_pytree_node(cls)
    return saved


def _restore_registration(cls, saved: tuple) -> None:
    from torch.utils import _pytree

    node, serialized = saved
    _pytree.SUPPORTED_NODES[cls] = node
    if serialized is not None:
        _pytree.SUPPORTED_SERIALIZED_TYPES[cls] = serialized
        _pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE[serialized.serialized_type_name] = cls


def _is_ours(cls, flatten) -> bool:
    from torch.utils import _pytree

    node = _pytree.SUPPORTED_NODES.get(cls)
    return node is not None and node.flatten_fn is flatten


def _one_expert(self, expert: int, states):
    """Expert ``expert`` of a ``@use_experts_implementation`` module on ``states`` (its tokens).

    Read from the flags the decorator sets, as transformers' ``batched_mm`` does: weights
    ``(experts, out, in)`` or transposed ``(experts, in, out)``, optional biases, a gated
    projection through the class's ``_apply_gate`` or a plain activation, an optional norm.
    """
    up = "gate_up_proj" if self.has_gate else "up_proj"
    bias = getattr(self, f"{up}_bias")[expert] if self.has_bias else None
    out = _project(self, states, getattr(self, up)[expert], bias)
    out = self._apply_gate(out) if self.has_gate else self.act_fn(out)
    bias = self.down_proj_bias[expert] if self.has_bias else None
    out = _project(self, out, self.down_proj[expert], bias)
    return self.post_expert_norm(out) if self.has_post_expert_norm else out


def _project(self, states, weight, bias):
    import torch

    out = states @ weight if self.is_transposed else torch.nn.functional.linear(states, weight)
    return out if bias is None else out + bias


def _eager_experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """transformers' eager experts loop, over ``range(num_experts)`` instead of the experts hit.

    Same ops in the same order as the eager loop (an expert that received no token adds
    nothing), so the same numbers; an expert-parallel sentinel index (``num_experts``) is
    skipped, as there. The sum is out of place (``index_add``, not ``index_add_``).
    """
    import torch

    final = torch.zeros_like(hidden_states)
    for expert in range(self.num_experts):
        top_k_pos, token_idx = torch.where((top_k_index == expert).T)
        out = _one_expert(self, expert, hidden_states[token_idx])
        out = out * top_k_weights[token_idx, top_k_pos, None]
        final = final.index_add(0, token_idx, out.to(final.dtype))
    return final


@contextlib.contextmanager
def _eager_experts_patch() -> Iterator[None]:
    """Routes ``experts_implementation="eager"`` to :func:`_eager_experts_forward`."""
    moe = sys.modules.get("transformers.integrations.moe")
    registry = getattr(moe, "ALL_EXPERTS_FUNCTIONS", None)
    if registry is None or "eager" in registry:
        # no experts class loaded, or "eager" already replaced (by us, outer block, or the user)
        yield
        return
    registry["eager"] = _eager_experts_forward
    try:
        yield
    finally:
        if registry.get("eager") is _eager_experts_forward:
            del registry["eager"]


@contextlib.contextmanager
def export_patches() -> Iterator[None]:
    """Makes ``transformers`` models traceable by ``torch.export``, for the block only.

    Their cache classes become pytree nodes and the eager experts loop of mixture-of-experts
    models runs over every expert (see the module docstring). Use it around your own
    ``torch.export.export`` call (``to_onnx`` applies it itself)::

        with tonnx.export_patches():
            ep = torch.export.export(model, (), kwargs={"input_ids": ids,
                                     "past_key_values": DynamicCache(...)})

    Nested use is a no-op; a cache registration made by someone else is set aside and
    restored on exit, an ``"eager"`` experts forward registered by someone else is left in
    place. When ``transformers`` is not imported, it does nothing.
    """
    if "transformers" not in sys.modules:
        yield
        return
    with _cache_patches(), _eager_experts_patch():
        yield


@contextlib.contextmanager
def _cache_patches() -> Iterator[None]:
    """Registers the cache classes as pytree nodes, setting aside other registrations."""
    registrations = _registrations()
    from torch.utils import _pytree

    applied: list[tuple[type, tuple | None]] = []
    try:
        for cls, flatten, unflatten, with_keys in registrations:
            if _is_ours(cls, flatten):
                continue
            applied.append((cls, _take_registration(cls)))
            _pytree.register_pytree_node(
                cls,
                flatten,
                unflatten,
                serialized_type_name=f"{cls.__module__}.{cls.__name__}",
                flatten_with_keys_fn=with_keys,
            )
        yield
    finally:
        for cls, saved in reversed(applied):
            if cls in _pytree.SUPPORTED_NODES:
                _pytree._deregister_pytree_node(cls)
            if saved is not None:
                _restore_registration(cls, saved)
