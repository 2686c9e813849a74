"""The KV cache folded into GroupQueryAttention: the op reads the cache, returns the new one.

With a cache, HF computes each layer's keys as ``Concat(past_key, new_key, axis=2)`` (also
the ``present`` output), repeats them for grouped heads and calls sdpa. The converter
splits the (repeated) keys it is given into the cached and the new ones (exact whatever
the keys are); this rule, when those keys are that Concat (through ``repeat_kv`` or not)
and the split keeps the Concat's new tokens last, hands the op the Concat's own inputs:
``past_key``/``past_value`` and the new tokens, un-repeated (``kv_num_heads``). The op's
``present_key``/``present_value`` outputs then replace the Concats, which disappear
with the split and the repeat.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx.converters import RewriteRule

from . import MS_DOMAIN
from ._patterns import producer_of, same, shape, source
from .attention import _BSNH, bsd_source, unrepeated

_PAST = (3, 4)  # past_key, past_value
_NEW = (1, 2)  # key, value


def _cache_concat(ctx, keys: str, heads: int):
    """(Concat node, kv heads) when ``keys`` is ``Concat(past, new, axis=2)``, possibly
    repeated by HF's ``repeat_kv`` to ``heads`` heads."""
    found = unrepeated(ctx, keys, heads)
    kv, kv_heads = found if found is not None else (keys, heads)
    concat = producer_of(ctx, kv, "Concat")
    if concat is None or len(concat.inputs) != 2 or concat.attributes.get("axis") not in (2, -2):
        return None
    shapes = [shape(ctx, name) for name in (*concat.inputs, concat.outputs[0])]
    if any(s is None or len(s) != 4 for s in shapes) or shapes[2][1] != kv_heads:
        return None
    return concat, kv_heads


def _split_cache(ctx, node, i: int, heads: int):
    """(Concat node, kv heads) when the op's key (``i`` = 1) or value (2) and its past are
    the two outputs of ``Split(keys, axis=2)``, ``keys`` a cache Concat whose new tokens
    are as many as the split's second part."""
    new_bnsh, past = bsd_source(ctx, node.inputs[i]), node.inputs[i + 2]
    split = new_bnsh and producer_of(ctx, new_bnsh, "Split")
    if split is None or len(split.outputs) != 2 or split.attributes.get("axis") not in (2, -2):
        return None
    if source(ctx, new_bnsh)[0] != split.outputs[1] or source(ctx, past)[0] != split.outputs[0]:
        return None
    found = _cache_concat(ctx, split.inputs[0], heads)
    new_shape = shape(ctx, split.outputs[1])
    if found is None or new_shape is None or len(new_shape) != 4:
        return None
    if not same(new_shape[2], shape(ctx, found[0].inputs[1])[2]):
        return None
    return found


def _packed(ctx, x: str, kv_heads: int, new: list) -> str:
    """(B, Nkv, L, H) -> (B, L, Nkv*H)."""
    head = shape(ctx, x)[3]
    bsnh = ctx.node("Transpose", [x], 1, perm=_BSNH)
    target = ctx.g.make_initializer("", np.array([0, 0, kv_heads * head], dtype=np.int64))
    packed = ctx.node("Reshape", [bsnh.outputs[0], target], 1)
    new += [bsnh, packed]
    return packed.outputs[0]


def _lengths(ctx, inputs: list, fresh: str, new: list) -> tuple[str, str, str]:
    """``seqlens_k`` (B,) = T - 1, ``total_sequence_length`` = T and ``query_seqlens``
    (B,) = L for L new tokens after P cached ones (T = P + L), read from what stays: the
    cache input and the (B|1, N|1, L, T) bias (else the new keys), not from the keys the
    op now computes or from tensors other rules fold away."""
    past, bias = inputs[3], inputs[10]
    (b, _, p, _), length = shape(ctx, past), shape(ctx, fresh)[2]
    g = ctx.g
    if all(type(d) is int for d in (b, p, length)):
        return (
            g.make_initializer("", np.full((b,), p + length - 1, dtype=np.int32)),
            g.make_initializer("", np.array(p + length, dtype=np.int32)),
            g.make_initializer("", np.full((b,), length, dtype=np.int32)),
        )

    def add(*args, **kwargs) -> str:
        node = ctx.node(*args, **kwargs)
        new.append(node)
        return node.outputs[0]

    def const(value, dtype=np.int64) -> str:
        return g.make_initializer("", np.array(value, dtype=dtype))

    if bias:  # (B|1, N|1, L, T)
        sizes = add("Cast", [add("Shape", [bias], 1)], 1, to=TensorProto.INT32)
        count, total = add("Gather", [sizes, const([2])], 1), add("Gather", [sizes, const(3)], 1)
    else:
        count = add("Cast", [add("Shape", [fresh], 1, start=2, end=3)], 1, to=TensorProto.INT32)
        past_count = add("Cast", [add("Shape", [past], 1, start=2, end=3)], 1, to=TensorProto.INT32)
        total = add("Squeeze", [add("Add", [past_count, count], 1), const([0])], 1)
    # the batch from the bias when it has it: the same nodes for every layer, merged
    batch_of = bias if bias and same((shape(ctx, bias) or (None,))[0], b) else past
    batch = add("Shape", [batch_of], 1, start=0, end=1)
    seqlens = add("Expand", [add("Sub", [total, const(1, np.int32)], 1), batch], 1)
    return seqlens, total, add("Expand", [count, batch], 1)


def gqa_kv_cache(ctx, node):
    """GroupQueryAttention on the split of a cache Concat -> on the Concat's inputs, its
    present outputs replacing the Concat (through HF's ``repeat_kv`` as well)."""
    inputs = [*node.inputs, *[""] * (17 - len(node.inputs))]
    if not all(inputs[i] for i in (*_NEW, *_PAST)) or node.attributes.get("do_rotary"):
        return None
    if any(ctx.readers(o) for o in node.outputs[1:3]):
        return None
    heads = node.attributes["kv_num_heads"]
    found = [_split_cache(ctx, node, i, heads) for i in _NEW]
    if None in found or found[0][1] != found[1][1]:
        return None
    (key_cat, kv_heads), (value_cat, _) = found
    if key_cat is value_cat:  # one cache for both: the op has two present outputs
        return None
    new: list = []
    inputs[1], inputs[2] = (_packed(ctx, cat.inputs[1], kv_heads, new) for cat in (key_cat, value_cat))
    inputs[3], inputs[4] = key_cat.inputs[0], value_cat.inputs[0]
    inputs[5], inputs[6], inputs[16] = _lengths(ctx, inputs, key_cat.inputs[1], new)
    outputs = [node.outputs[0], key_cat.outputs[0], value_cat.outputs[0]]
    attributes = {**node.attributes, "kv_num_heads": kv_heads}
    new.append(ctx.node(node.op_type, inputs, outputs, domain=node.domain, **attributes))
    if not ctx.take_over(key_cat, value_cat, replacement=new):
        return None
    return new


REWRITES = (RewriteRule("gqa_kv_cache", "GroupQueryAttention", gqa_kv_cache, domain=MS_DOMAIN),)
