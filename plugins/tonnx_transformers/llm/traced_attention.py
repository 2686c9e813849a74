"""Attention traced as one op: export-llm's torch.export takes about half the time.

Under torch.export with dynamic shapes every ATen call pays for symbolic-shape reasoning,
and attention pays the most: ``scaled_dot_product_attention`` is CompositeImplicitAutograd,
so the fake tensors run its math decomposition (two matmuls, the softmax, the masking) only
to learn the output's shape, and transformers' ``repeat_kv`` adds an expand and a reshape
for the key and for the value. On the 4-layer Llama of ``tests/bench/bench_llm_export.py``
that is half of the trace: 5.1 s -> 2.6 s without it.

While export-llm traces the model, :func:`attention_as_one_op` routes
``torch.nn.functional.scaled_dot_product_attention`` to the custom op
``tonnx_transformers::sdpa`` (the same arguments; its fake kernel only makes the output's
shape) and lets transformers pass grouped key/value heads as they are (``enable_gqa=True``:
the numbers of repeating them). :func:`restore_attention` then turns every node of that op
back into ``aten.scaled_dot_product_attention`` with the same arguments, before
conversion: the converters and rewrite rules see the graph torch would have traced, minus
``repeat_kv``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

OP_NAME = "tonnx_transformers::sdpa"
_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_SCHEMA = (
    "(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
    "bool is_causal, float? scale, bool enable_gqa) -> Tensor"
)


def _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """The op's eager kernel: torch's own (it only runs if the model runs in the block)."""
    import torch

    return torch.ops.aten.scaled_dot_product_attention.default(
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa
    )


def _output_like(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """The op's fake kernel: (..., L, Ev), contiguous, as torch's CPU kernels return it.

    It asks what torch's kernel asks of the sizes (the mask broadcasts to the (..., L, S)
    scores, key and value hold S rows, the batch dimensions agree): with dynamic shapes
    these are the guards that make every layer's cache length one dimension."""
    import torch

    torch._check(key.shape[-2] == value.shape[-2])
    torch._check(key.shape[-1] == query.shape[-1])
    torch.broadcast_shapes(query.shape[:-3], key.shape[:-3], value.shape[:-3])
    if attn_mask is not None:
        torch.broadcast_shapes(attn_mask.shape, (*query.shape[:-1], key.shape[-2]))
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


def _op() -> Any:
    """``torch.ops.tonnx_transformers.sdpa.default``, defined on first use."""
    import torch

    namespace, _, name = OP_NAME.partition("::")
    packet = getattr(getattr(torch.ops, namespace), name, None)
    if packet is None:
        defined = torch.library.custom_op(OP_NAME, _attention, mutates_args=(), schema=_SCHEMA)
        defined.register_fake(_output_like)
        packet = getattr(getattr(torch.ops, namespace), name)
    return packet.default


@contextlib.contextmanager
def attention_as_one_op() -> Iterator[None]:
    """``F.scaled_dot_product_attention`` is ``tonnx_transformers::sdpa`` in the block, and
    transformers' sdpa attention passes grouped heads with ``enable_gqa=True``."""
    import torch.nn.functional as F
    from transformers.integrations import sdpa_attention

    op = _op()

    def one_op(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
               enable_gqa=False):
        return op(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)

    saved = F.scaled_dot_product_attention
    grouped = getattr(sdpa_attention, "use_gqa_in_sdpa", None)
    F.scaled_dot_product_attention = one_op
    if grouped is not None:
        sdpa_attention.use_gqa_in_sdpa = _always
    try:
        yield
    finally:
        F.scaled_dot_product_attention = saved
        if grouped is not None:
            sdpa_attention.use_gqa_in_sdpa = grouped


def _always(*args, **kwargs) -> bool:
    return True


def restore_attention(program: Any) -> int:
    """Every ``tonnx_transformers::sdpa`` node of ``program`` -> the ATen op, in its
    subgraphs too (a higher-order op's branches or body: HRM's attention is in one);
    returns how many."""
    import torch

    op, aten = _op(), torch.ops.aten.scaled_dot_product_attention.default
    count = 0
    for module in program.graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        found = 0
        for node in module.graph.nodes:
            if node.target is op:
                call = dict(zip(_ARGS, node.args), **node.kwargs)
                node.target = aten
                node.args = tuple(call[name] for name in _ARGS[:6])
                node.kwargs = {"scale": call["scale"], "enable_gqa": call["enable_gqa"]}
                found += 1
        if found:
            module.recompile()
        count += found
    return count
