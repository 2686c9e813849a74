"""scaled_dot_product_attention as onnxruntime's fused ``GroupQueryAttention``.

One kernel replaces the MatMul/Softmax/MatMul chain, the bias Add and the repeat of the
key/value heads. ``GroupQueryAttention`` (with ``causal=0`` when a mask is given) is used
for grouped and plain multi-head attention alike: on CPU it runs this prefill faster
than ``MultiHeadAttention`` (bench/bench_ortcontrib.py). Exactness, as torch computes it:

- all keys are valid (``seqlens_k = S - 1`` for every row), the mask goes in
  ``attention_bias`` as torch's math kernel adds it (a bool mask as 0/-inf), the causal
  mask is the (L, S) lower triangle (``causal=1`` when L == S, a bias otherwise);
- torch gives 0 to a query row whose keys are all masked: the bias's dead rows are set to
  0 (no NaN) and the output multiplied by a 0/1 factor, as the aten pack does;
- float32 only (torch computes half types in float32; the aten pack keeps those), a
  positive scale (0 means "default" to onnxruntime), no dropout, self-attention shapes
  (L == S, value head size == key head size, a multiple of 8: the op's requirements).

The predicate leaves every other call to the aten pack. A rewrite rule then feeds the
un-repeated key/value of HF's ``repeat_kv`` (Unsqueeze/Expand/Reshape) to the op.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter
from tonnx.converters import RewriteRule

from . import MS_DOMAIN
from ._patterns import constant, producer_of, same, same_value, shape, source

_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}
_BSNH = [0, 2, 1, 3]


def _call(node) -> dict:
    """The call's arguments by ATen name (FX nodes replaced by their meta values)."""
    values = dict(_DEFAULTS)
    values.update(zip(_ARGS, node.args))
    values.update(node.kwargs)
    return {k: (v.meta.get("val") if hasattr(v, "meta") else v) for k, v in values.items()}


def _fits(node) -> bool:
    """True when GroupQueryAttention computes exactly what torch does for this call."""
    import torch

    call = _call(node)
    q, k, v, mask = call["query"], call["key"], call["value"], call["attn_mask"]
    if any(getattr(t, "dtype", None) != torch.float32 or t.dim() != 4 for t in (q, k, v)):
        return False
    if call["dropout_p"] or (call["scale"] is not None and call["scale"] <= 0):
        return False
    (b, hq, _, e), (bk, hk, s, ek), (bv, hv, sv, ev) = q.shape, k.shape, v.shape
    static = (hq, e, hk, ek, hv, ev)
    if not all(type(d) is int for d in static) or ek != e or ev != e or e % 8 or hk != hv or hq % hk:
        return False
    if hk != hq and not call["enable_gqa"]:
        return False
    # self-attention lengths: the op takes L == S new tokens (no cache here)
    if not (same(b, bk) and same(b, bv) and same(s, sv) and same(q.shape[2], s)):
        return False
    if mask is None:
        return True
    if mask.dtype not in (torch.bool, torch.float32) or mask.dim() > 4:
        return False
    wanted = (b, hq, q.shape[2], s)[4 - mask.dim() :]
    return all(d == 1 or same(d, w) for d, w in zip(mask.shape, wanted))


def _dims(g, x: str, start: int, end: int) -> str:
    dims = g.get_shape(x)[start:end]
    if all(type(d) is int for d in dims):
        return g.make_initializer("", np.array(dims, dtype=np.int64))
    return g.op.Shape(x, start=start, end=end)


def _to_bsd(g, x: str) -> str:
    """(B, N, S, H) -> (B, S, N*H), the layout of the fused ops."""
    _, n, _, h = g.get_shape(x)
    return g.op.Reshape(g.op.Transpose(x, perm=_BSNH), np.array([0, 0, n * h], dtype=np.int64))


def _causal_keep(g, query: str, key: str) -> str:
    """Bool (L, S) lower triangle, torch's ``ones(L, S).tril(0)``."""
    length, size = g.get_shape(query)[2], g.get_shape(key)[2]
    if type(length) is int and type(size) is int:
        return g.make_initializer("", np.tril(np.ones((length, size), dtype=np.bool_)))
    zero, one = np.array(0, np.int64), np.array(1, np.int64)
    rows = g.op.Range(zero, g.op.Squeeze(_dims(g, query, 2, 3), [0]), one)
    cols = g.op.Range(zero, g.op.Squeeze(_dims(g, key, 2, 3), [0]), one)
    return g.op.LessOrEqual(cols, g.op.Unsqueeze(rows, [1]))


def _broadcast(a: tuple, b: tuple) -> tuple:
    """The broadcast of two shapes (the predicate checked that they broadcast)."""
    a, b = (1,) * (len(b) - len(a)) + tuple(a), (1,) * (len(a) - len(b)) + tuple(b)
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def _bias(g, query, key, mask, causal_in_bias: bool) -> str | None:
    """The additive bias: the float mask, or 0/-inf where the (bool, causal) masks say."""
    bias = keep = None
    if mask is not None and g.get_type(mask) == TensorProto.BOOL:
        keep = mask
    elif mask is not None:
        bias = mask
    if causal_in_bias:
        causal = _causal_keep(g, query, key)
        causal_shape = (g.get_shape(query)[2], g.get_shape(key)[2])
        if keep is not None:
            shape = _broadcast(g.get_shape(keep), causal_shape)
            keep = g.op.And(keep, causal)
            g.set_shape(keep, shape)
        else:
            keep = causal
            g.set_shape(keep, causal_shape)
    if keep is None:
        return bias
    kept = np.array(0, dtype=np.float32) if bias is None else bias
    shape = g.get_shape(keep) if bias is None else _broadcast(g.get_shape(keep), g.get_shape(bias))
    out = g.op.Where(keep, kept, np.array(-np.inf, dtype=np.float32))
    g.set_shape(out, shape)
    return out


def _full_rank(g, bias: str, query: str, key: str) -> str:
    """The bias as (B|1, H|1, L, S): leading axes added, the last two expanded."""
    shape = g.get_shape(bias)
    if len(shape) < 4:
        bias = g.op.Unsqueeze(bias, np.arange(4 - len(shape), dtype=np.int64))
        shape = (1,) * (4 - len(shape)) + tuple(shape)
        g.set_shape(bias, shape)
    length, size = g.get_shape(query)[2], g.get_shape(key)[2]
    if same(shape[2], length) and same(shape[3], size):
        return bias
    target = g.op.Concat(np.ones(2, dtype=np.int64), _dims(g, query, 2, 3), _dims(g, key, 2, 3), axis=0)
    out = g.op.Expand(bias, target)
    g.set_shape(out, (*shape[:2], length, size))
    return out


def _without_dead_rows(g, bias: str) -> tuple[str, str | None]:
    """(bias with fully masked rows set to 0, the 0/1 (B|1, H|1, L, 1) factor or None)."""
    if g.is_constant(bias):
        values = g.get_constant(bias)
        dead = ~(values != -np.inf).any(axis=-1, keepdims=True)
        if not dead.any():
            return bias, None
        return (
            g.make_initializer("", np.where(dead, 0, values).astype(np.float32)),
            g.make_initializer("", (~dead).astype(np.float32)),
        )
    last = np.array([-1], dtype=np.int64)
    dead = g.op.IsInf(g.op.ReduceMax(bias, last, keepdims=1), detect_positive=0)
    alive = g.op.Cast(g.op.Not(dead), to=TensorProto.FLOAT)
    return g.op.Where(dead, np.array(0, dtype=np.float32), bias), alive


def _is_causal_constant(g, mask: str, length, size) -> bool:
    """True for a constant mask that is exactly the causal one (what HF builds for a batch
    without padding): the op's ``causal=1`` then replaces a bias read for every score."""
    if type(length) is not int or length != size or not g.is_constant(mask):
        return False
    value = g.get_constant(mask)
    if value.ndim < 2 or value.shape[-2:] != (length, size):
        return False
    keep = np.tril(np.ones((length, size), dtype=np.bool_))
    if value.dtype == np.bool_:
        return bool((value == keep).all())
    return bool((value == np.where(keep, 0, -np.inf)).all())


def _lengths(g, key: str) -> tuple[str, str]:
    """GroupQueryAttention's ``seqlens_k`` (B,) = S - 1 and ``total_sequence_length`` = S."""
    b, _, s, _ = g.get_shape(key)
    if type(b) is int and type(s) is int:
        return (
            g.make_initializer("", np.full((b,), s - 1, dtype=np.int32)),
            g.make_initializer("", np.array(s, dtype=np.int32)),
        )
    total = g.op.Cast(g.op.Squeeze(_dims(g, key, 2, 3), [0]), to=TensorProto.INT32)
    seqlens = g.op.Expand(g.op.Sub(total, np.array(1, dtype=np.int32)), _dims(g, key, 0, 1))
    return seqlens, total


# aten::scaled_dot_product_attention.default
def aten_scaled_dot_product_attention(
    g,
    sts,
    outputs,
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    scale=None,
    enable_gqa=False,
):
    "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"
    _, hq, length, _ = g.get_shape(query)
    _, hkv, size, ev = g.get_shape(value)
    if attn_mask is not None and _is_causal_constant(g, attn_mask, length, size):
        attn_mask, is_causal = None, True
    causal_attr = bool(is_causal) and attn_mask is None and same(length, size)
    bias = _bias(g, query, key, attn_mask, bool(is_causal) and not causal_attr)
    alive = None
    if bias is not None:
        bias = _full_rank(g, bias, query, key)
        if attn_mask is not None:  # a causal mask alone never empties a row
            bias, alive = _without_dead_rows(g, bias)
    seqlens, total = _lengths(g, key)
    attributes = {"num_heads": hq, "kv_num_heads": hkv, "causal": int(causal_attr)}
    if scale is not None:
        attributes["scale"] = float(scale)
    q3, k3, v3 = _to_bsd(g, query), _to_bsd(g, key), _to_bsd(g, value)
    inputs = [q3, k3, v3, "", "", seqlens, total, "", "", "", bias or ""]
    out, *present = g.make_node("GroupQueryAttention", inputs, 3, domain=MS_DOMAIN, **attributes)
    for name in (out, *present):
        g.set_type(name, TensorProto.FLOAT)
    g.set_shape(out, (g.get_shape(query)[0], length, hq * ev))  # lets the layout rules cancel
    out = g.op.Reshape(out, np.array([0, 0, hq, ev], dtype=np.int64))
    if alive is not None:
        out = g.op.Mul(out, g.op.Transpose(alive, perm=_BSNH))
    return g.op.Transpose(out, perm=_BSNH, outputs=outputs)


CONVERTERS = (
    Converter(
        "aten::scaled_dot_product_attention.default",
        aten_scaled_dot_product_attention,
        applies=_fits,
    ),
)

# -- the rewrite: HF's repeat_kv folded into the op ------------------------------------------


def _repeated_source(ctx, packed: str, rep_heads: int):
    """(kv, kv heads) when ``packed`` is ``Reshape(Transpose(repeat_kv(kv)), (0, 0, -))``.

    ``repeat_kv(kv)`` is ``Reshape(Expand(Unsqueeze(kv, 2)), (B, Hkv*r, S, H))``: kv head
    j // r serves query head j, which is how GroupQueryAttention groups heads.
    """
    bsd = producer_of(ctx, packed, "Reshape")
    bnsh = bsd and producer_of(ctx, bsd.inputs[0], "Transpose")
    if bnsh is None or list(bnsh.attributes.get("perm", ())) != _BSNH:
        return None
    wide = producer_of(ctx, bnsh.inputs[0], "Reshape")
    expand = wide and producer_of(ctx, wide.inputs[0], "Expand")
    # with one query head per kv head, torch.export drops the no-op expand
    unsq = producer_of(ctx, (expand or wide).inputs[0], "Unsqueeze") if wide else None
    if unsq is None or constant(ctx, unsq.inputs[1]) is None:
        return None
    if [int(a) for a in constant(ctx, unsq.inputs[1]).reshape(-1)] not in ([2], [-3]):
        return None
    kv = unsq.inputs[0]
    kv_shape, w_shape = shape(ctx, kv), shape(ctx, wide.outputs[0])
    e_shape = shape(ctx, (expand or unsq).outputs[0])
    if kv_shape is None or e_shape is None or w_shape is None or len(kv_shape) != 4:
        return None
    b, hkv, s, h = kv_shape
    if type(hkv) is not int or rep_heads % hkv:
        return None
    r = rep_heads // hkv
    if not (len(e_shape) == 5 and all(same(x, y) for x, y in zip(e_shape, (b, hkv, r, s, h)))):
        return None
    if not (len(w_shape) == 4 and all(same(x, y) for x, y in zip(w_shape, (b, rep_heads, s, h)))):
        return None
    return kv, hkv


def gqa_repeat_kv(ctx, node):
    """GroupQueryAttention on repeated key/value heads -> on the original ones."""
    heads = node.attributes.get("num_heads")
    if node.attributes.get("kv_num_heads") != heads or len(node.inputs) < 3:
        return None
    found = [_repeated_source(ctx, node.inputs[i], heads) for i in (1, 2)]
    if None in found or found[0][1] != found[1][1]:
        return None
    hkv = found[0][1]
    new, inputs = [], list(node.inputs)
    for i, (kv, _) in zip((1, 2), found):
        h = shape(ctx, kv)[3]
        bsnh = ctx.node("Transpose", [kv], 1, perm=_BSNH)
        packed = ctx.node("Reshape", [bsnh.outputs[0], ctx.g.make_initializer("", np.array([0, 0, hkv * h], dtype=np.int64))], 1)
        new += [bsnh, packed]
        inputs[i] = packed.outputs[0]
    attributes = {**node.attributes, "kv_num_heads": hkv}
    return [*new, ctx.node(node.op_type, inputs, node.outputs, domain=node.domain, **attributes)]


# -- the rewrite: one projection for query, key and value, rotary inside the op -------------


def _projection(ctx, name: str):
    """(x, weight) when ``name`` is ``MatMul(x, W)`` with a constant 2-D weight."""
    mm = producer_of(ctx, name, "MatMul")
    if mm is None or not ctx.g.is_constant(mm.inputs[1]) or len(shape(ctx, mm.inputs[1]) or ()) != 2:
        return None
    return mm.inputs[0], mm.inputs[1]


def _prompt_positions(ctx, positions: str, length) -> bool:
    """True for a constant (B, S) table whose every row is 0..S-1: the positions
    GroupQueryAttention gives a prompt without cache."""
    value = constant(ctx, positions)
    if value is None or value.ndim != 2 or type(length) is not int or value.shape[1] != length:
        return False
    return bool((value == np.arange(length)).all())


def _rotated(ctx, name: str):
    """(projection, (positions, cos, sin)) for ``RotaryEmbedding(p)`` (B, S, N*H), else (name, None)."""
    rot = producer_of(ctx, name, "RotaryEmbedding", MS_DOMAIN)
    if rot is None or rot.attributes.get("interleaved") or len(shape(ctx, rot.inputs[0]) or ()) != 3:
        return name, None
    return rot.inputs[0], tuple(rot.inputs[1:4])


def _split_qkv(ctx, node) -> str | None:
    """x when query, key and value are the three outputs, in order, of ``Split(x, -1)``
    (GPT2's fused projection): x is already the packed query."""
    split = producer_of(ctx, node.inputs[0], "Split")
    if split is None or len(split.outputs) != 3 or split.attributes.get("axis") not in (-1, 2):
        return None
    if [source(ctx, name)[0] for name in node.inputs[:3]] != list(split.outputs):
        return None
    x_shape = shape(ctx, split.inputs[0])
    return split.inputs[0] if x_shape is not None and len(x_shape) == 3 else None


def gqa_packed_qkv(ctx, node):
    """Three projections of one input (and their rotary embeddings) -> one MatMul feeding
    the packed (B, S, (N + 2 Nkv) H) query of GroupQueryAttention (``do_rotary=1``); three
    outputs of one Split (GPT2) -> the split input.

    Rotary inside the op uses positions 0..S-1 (a prompt without cache): the rule fires
    only when the RotaryEmbedding nodes read exactly those positions, and both share one
    table.
    """
    if node.attributes.get("do_rotary") or len(node.inputs) < 7 or any(node.inputs[7:10]):
        return None
    split = _split_qkv(ctx, node)
    if split is not None:
        return [ctx.node(node.op_type, [split, "", "", *node.inputs[3:]], node.outputs, domain=node.domain, **node.attributes)]
    q, rq = _rotated(ctx, node.inputs[0])
    k, rk = _rotated(ctx, node.inputs[1])
    if (rq is None) != (rk is None) or _rotated(ctx, node.inputs[2])[1] is not None:
        return None
    if rq is not None and not all(same_value(ctx, a, b) for a, b in zip(rq, rk)):
        return None
    parts = [_projection(ctx, name) for name in (q, k, node.inputs[2])]
    if None in parts or len({x for x, _ in parts}) != 1:
        return None
    if rq is not None and not _prompt_positions(ctx, rq[0], shape(ctx, q)[1] if shape(ctx, q) else None):
        return None
    q_shape = shape(ctx, q)
    if rq is not None and (q_shape is None or (q_shape[-1] // node.attributes["num_heads"]) % 16):
        return None  # onnxruntime's rotary inside the op wants a head size multiple of 16
    g = ctx.g
    weights = [g.get_constant(w) for _, w in parts]
    if len({w.dtype for w in weights}) != 1 or len({w.shape[0] for w in weights}) != 1:
        return None
    packed_w = g.make_initializer("", np.concatenate(weights, axis=1), dedup=False)
    mm = ctx.node("MatMul", [parts[0][0], packed_w], 1)
    inputs = [mm.outputs[0], "", "", *node.inputs[3:7], *(rq[1:] if rq else ("", "")), *node.inputs[9:]]
    attributes = dict(node.attributes)
    if rq is not None:
        attributes["do_rotary"] = 1
    return [mm, ctx.node(node.op_type, inputs, node.outputs, domain=node.domain, **attributes)]


REWRITES = (
    RewriteRule("gqa_repeat_kv", "GroupQueryAttention", gqa_repeat_kv, domain=MS_DOMAIN),
    RewriteRule("gqa_packed_qkv", "GroupQueryAttention", gqa_packed_qkv, domain=MS_DOMAIN),
)
