"""HF's ``repeat_kv`` before ONNX ``Attention`` -> the op's own grouped-query heads.

``repeat_kv(kv)`` is ``Reshape(Expand(Unsqueeze(kv, 2)), (B, Hkv * r, S, H))``: query head
``j`` reads kv head ``j // r``. ``Attention`` with fewer key/value heads than query heads
repeats each kv head the same way (``[h0, h0, h1, h1, ...]``, onnx's reference), so the
repeat goes and the op reads the kv heads themselves (the cache's, with a KV cache).
"""

from __future__ import annotations

from ._patterns import ints, producer, same, shape


def _unrepeated(ctx, wide_name: str, heads):
    """(kv, kv heads) when ``wide_name`` is ``repeat_kv(kv)`` with ``heads`` heads."""
    wide = producer(ctx, wide_name, "Reshape")
    expand = wide and producer(ctx, wide.inputs[0], "Expand")
    unsq = expand and producer(ctx, expand.inputs[0], "Unsqueeze")
    if unsq is None or ints(ctx, unsq.inputs[1]) not in ([2], [-3]):
        return None
    kv = unsq.inputs[0]
    kv_shape, w_shape = shape(ctx, kv), shape(ctx, wide_name)
    e_shape = shape(ctx, expand.outputs[0])
    if kv_shape is None or e_shape is None or w_shape is None or len(kv_shape) != 4:
        return None
    b, hkv, s, h = kv_shape
    if type(hkv) is not int or type(heads) is not int or heads % hkv or heads == hkv:
        return None
    r = heads // hkv
    if len(e_shape) != 5 or not all(same(x, y) for x, y in zip(e_shape, (b, hkv, r, s, h))):
        return None
    if len(w_shape) != 4 or not all(same(x, y) for x, y in zip(w_shape, (b, heads, s, h))):
        return None
    return kv, hkv


def attention_repeat_kv(ctx, node):
    """``Attention(q, repeat_kv(k), repeat_kv(v), ...)`` -> ``Attention(q, k, v, ...)``."""
    if len(node.inputs) < 3 or len(node.inputs) > 4 or any(node.outputs[1:]):
        return None
    q_shape = shape(ctx, node.inputs[0])
    if q_shape is None or len(q_shape) != 4:
        return None
    found = [_unrepeated(ctx, node.inputs[i], q_shape[1]) for i in (1, 2)]
    if None in found or found[0][1] != found[1][1]:
        return None
    inputs = [node.inputs[0], found[0][0], found[1][0], *node.inputs[3:]]
    return [ctx.node("Attention", inputs, node.outputs, **node.attributes)]
