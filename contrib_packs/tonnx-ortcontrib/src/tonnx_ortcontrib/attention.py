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
  positive scale (0 means "default" to onnxruntime), no dropout, value head size == key
  head size, a multiple of 8 (the op's requirements);
- L == S (self-attention), or L < S with a KV cache: the last L keys are the new tokens,
  the first S - L the op's ``past_key``/``past_value`` (split here, taken from the cache's
  Concat by :mod:`.cache`). onnxruntime then wants ``causal=1`` (with ``query_seqlens``,
  which lets a batch of several new tokens per row run): query l sees keys ``j <= l + S - L``,
  so the mask must provably hide every later key (:mod:`._causal`, or torch's own
  ``is_causal``) and goes in the bias as before. ``query_seqlens`` is onnxruntime 1.32's:
  for an older target (:mod:`._target`) attention with a cache keeps the standard graph.

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
from ._target import QUERY_SEQLENS, Target, text

_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}
_BSNH = [0, 2, 1, 3]


def _args(node) -> dict:
    """The call's arguments by ATen name (FX nodes as they are)."""
    values = dict(_DEFAULTS)
    values.update(zip(_ARGS, node.args))
    values.update(node.kwargs)
    return values


def _call(node) -> dict:
    """The call's arguments by ATen name (FX nodes replaced by their meta values)."""
    return {k: (v.meta.get("val") if hasattr(v, "meta") else v) for k, v in _args(node).items()}


def _self_attention(query, key) -> bool:
    """L == S as torch.export knows it (FakeTensors): the op's query and key lengths."""
    return same(query.shape[2], key.shape[2])


def _cache_fits(node, call: dict) -> bool:
    """With L != S (keys of earlier tokens in front, a KV cache): the op's causal mask
    (query ``s`` sees keys ``j <= s + S - L``) must hide nothing torch shows, so the keys
    must be at least as many as the queries and the mask provably causal (:mod:`._causal`)
    or torch's own ``is_causal`` (keys ``j <= s``)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    from ._causal import within_causal

    q, k = call["query"], call["key"]
    if not statically_known_true(k.shape[2] >= q.shape[2]):
        return False
    if call["attn_mask"] is None:
        return bool(call["is_causal"])
    args = _args(node)
    return not call["is_causal"] and within_causal(args["attn_mask"], args["query"], args["key"])


def _fits(node, target: Target) -> bool:
    """True when GroupQueryAttention computes exactly what torch does for this call, on
    the ``target`` onnxruntime."""
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
    if not (same(b, bk) and same(b, bv) and same(s, sv)):
        return False
    if not _self_attention(q, k) and not (target.gqa_with_cache and _cache_fits(node, call)):
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
    b, n, s, h = g.get_shape(x)
    out = g.op.Reshape(g.op.Transpose(x, perm=_BSNH), np.array([0, 0, n * h], dtype=np.int64))
    g.set_shape(out, (b, s, n * h))
    return out


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
    kept = g.op.Where(dead, np.array(0, dtype=np.float32), bias)
    g.set_shape(kept, g.get_shape(bias))
    g.set_shape(alive, (*g.get_shape(bias)[:-1], 1))
    return kept, alive


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


def _query_lengths(g, q3: str) -> str:
    """GroupQueryAttention's ``query_seqlens`` (B,) = L: every query row is a new token
    (read from the op's (B, L, N*H) query: no other reader keeps the (B, N, L, H) one)."""
    b, length, _ = g.get_shape(q3)
    if type(b) is int and type(length) is int:
        return g.make_initializer("", np.full((b,), length, dtype=np.int32))
    count = g.op.Cast(g.op.Squeeze(_dims(g, q3, 1, 2), [0]), to=TensorProto.INT32)
    return g.op.Expand(count, _dims(g, q3, 0, 1))


def _difference(size, length):
    """The symbolic dimension ``size - length`` (a name for the shapes of the graph)."""
    if type(size) is int and type(length) is int:
        return size - length
    if isinstance(size, str) and size.endswith(f" + {length}"):
        return size[: -len(f" + {length}")]
    return f"{size} - {length}"


def _split_cache(g, x: str, query: str) -> tuple[str, str]:
    """(B, H, S, E) -> the S - L keys in front (the cache) and the last L (the new tokens)."""
    b, h, size, e = g.get_shape(x)
    length = g.get_shape(query)[2]
    count = _dims(g, query, 2, 3)
    sizes = g.op.Concat(g.op.Sub(_dims(g, x, 2, 3), count), count, axis=0)
    past, new = g.make_node("Split", [x, sizes], 2, axis=2)
    g.set_shape(past, (b, h, _difference(size, length), e))
    g.set_shape(new, (b, h, length, e))
    return past, new


def _cache_inputs(g, query: str, q3: str, key: str, value: str) -> dict:
    """GroupQueryAttention's inputs for L new tokens after S - L cached ones: the keys and
    values split into past and new (a rewrite rule takes them from the cache's Concat)."""
    past_key, new_key = _split_cache(g, key, query)
    past_value, new_value = _split_cache(g, value, query)
    seqlens, total = _lengths(g, key)
    return {
        1: _to_bsd(g, new_key), 2: _to_bsd(g, new_value), 3: past_key, 4: past_value,
        5: seqlens, 6: total, 16: _query_lengths(g, q3),
    }  # fmt: skip


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
    # with a cache (fewer queries than keys, shown causal by the predicate) the op's causal
    # mask, aligned on the last key, holds, and the mask as bias adds exactly what torch adds
    cache = not _self_attention(*sts.input_values[:2])
    if attn_mask is not None and not cache and _is_causal_constant(g, attn_mask, length, size):
        attn_mask, is_causal = None, True
    causal_attr = cache or (bool(is_causal) and attn_mask is None)
    bias = _bias(g, query, key, attn_mask, bool(is_causal) and (cache or not causal_attr))
    alive = None
    if bias is not None:
        bias = _full_rank(g, bias, query, key)
        if attn_mask is not None:  # a causal mask alone never empties a row
            bias, alive = _without_dead_rows(g, bias)
    attributes = {"num_heads": hq, "kv_num_heads": hkv, "causal": int(causal_attr)}
    if scale is not None:
        attributes["scale"] = float(scale)
    inputs = [_to_bsd(g, query), *[""] * 16]
    if cache:
        for i, name in _cache_inputs(g, query, inputs[0], key, value).items():
            inputs[i] = name
    else:
        inputs[1], inputs[2] = _to_bsd(g, key), _to_bsd(g, value)
        inputs[5], inputs[6] = _lengths(g, key)
    inputs[10] = bias or ""
    out, *present = g.make_node("GroupQueryAttention", inputs, 3, domain=MS_DOMAIN, **attributes)
    for name in (out, *present):
        g.set_type(name, TensorProto.FLOAT)
    b, _, _, e = g.get_shape(key)
    g.set_shape(present[0], (b, hkv, size, e))
    g.set_shape(present[1], (b, hkv, size, ev))
    out_shape = (g.get_shape(query)[0], length, hq * ev)
    g.set_shape(out, out_shape)  # lets the layout rules cancel
    if alive is not None and (g.get_shape(alive) or (None, None))[1] == 1:
        # one factor for every head: applied to (B, L, N*H), the layout pairs still cancel
        out = g.op.Mul(out, g.op.Squeeze(alive, np.array([1], dtype=np.int64)))
        g.set_shape(out, out_shape)
        alive = None
    out = g.op.Reshape(out, np.array([0, 0, hq, ev], dtype=np.int64))
    g.set_shape(out, (out_shape[0], length, hq, ev))
    if alive is not None:
        out = g.op.Mul(out, g.op.Transpose(alive, perm=_BSNH))
    return g.op.Transpose(out, perm=_BSNH, outputs=outputs)


def converters(target: Target) -> tuple[Converter, ...]:
    """The converter, its predicate for ``target`` (``tonnx explain`` prints its docstring)."""

    def applies(node) -> bool:
        return _fits(node, target)

    if target.gqa_with_cache:
        applies.__doc__ = f"{target}: GroupQueryAttention with or without a KV cache, when exact"
    else:
        applies.__doc__ = (
            f"{target}: GroupQueryAttention without a KV cache, when exact; with a cache the "
            f"standard graph (the op's query_seqlens input is onnxruntime {text(QUERY_SEQLENS)}'s)"
        )
    key = "aten::scaled_dot_product_attention.default"
    return (Converter(key, aten_scaled_dot_product_attention, applies=applies),)

# -- the rewrite: HF's repeat_kv folded into the op ------------------------------------------


def unrepeated(ctx, wide_name: str, rep_heads: int):
    """(kv, kv heads) when ``wide_name`` is HF's ``repeat_kv(kv)`` with ``rep_heads`` heads.

    ``repeat_kv(kv)`` is ``Reshape(Expand(Unsqueeze(kv, 2)), (B, Hkv*r, S, H))``: kv head
    j // r serves query head j, which is how GroupQueryAttention groups heads.
    """
    wide = producer_of(ctx, wide_name, "Reshape")
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


def bsd_source(ctx, packed: str) -> str | None:
    """x when ``packed`` is the converter's ``Reshape(Transpose(x, (0, 2, 1, 3)), (0, 0, -))``."""
    bsd = producer_of(ctx, packed, "Reshape")
    bnsh = bsd and producer_of(ctx, bsd.inputs[0], "Transpose")
    if bnsh is None or list(bnsh.attributes.get("perm", ())) != _BSNH:
        return None
    return bnsh.inputs[0]


def _repeated_source(ctx, packed: str, rep_heads: int):
    """(kv, kv heads) when ``packed`` is ``Reshape(Transpose(repeat_kv(kv)), (0, 0, -))``."""
    wide = bsd_source(ctx, packed)
    return None if wide is None else unrepeated(ctx, wide, rep_heads)


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
    """(x, weight, transposed) when ``name`` is ``MatMul(x, W)`` (W ``[K, N]``) or
    ``MatMul(x, Transpose(W))`` (``nn.Linear``'s ``[N, K]`` weight) with W a 2-D initializer,
    in memory or on ``meta`` (a streamed model's: packed as the file is written)."""
    mm = producer_of(ctx, name, "MatMul")
    if mm is None:
        return None
    weight, transposed = mm.inputs[1], False
    t = ctx.producer(weight)
    if t is not None:
        if t.op_type != "Transpose" or t.domain or list(t.attributes.get("perm", [1, 0])) != [1, 0]:
            return None
        weight, transposed = t.inputs[0], True
    if weight not in ctx.g.constants or len(shape(ctx, weight) or ()) != 2:
        return None
    return mm.inputs[0], weight, transposed


def _packed_weight(g, parts) -> str:
    """One ``[K, N_q + N_k + N_v]`` initializer of the three projections' weights."""
    names = [w for _, w, _ in parts]
    flips = [t for _, _, t in parts]
    dims = [g.get_shape(w) for w in names]
    k = dims[0][1] if flips[0] else dims[0][0]
    n = sum(d[0] if t else d[1] for d, t in zip(dims, flips))

    def pack(*values):
        return np.concatenate([v.T if t else v for v, t in zip(values, flips)], axis=1)

    return g.make_derived_initializer(names, pack, (k, n), g.constants[names[0]].dtype)


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

    Rotary inside the op uses positions 0..S-1 (a prompt without cache) or, with a cache
    (``query_seqlens`` given: onnxruntime then reads every row of ``position_ids``), the
    RotaryEmbedding nodes' own positions and tables (padded to the op's required
    ``total_sequence_length`` rows). The rule fires only when both RotaryEmbedding nodes
    share positions and tables.
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
    if rq is not None and not all(same_value(ctx, a, b, depth=10) for a, b in zip(rq, rk)):
        return None
    parts = [_projection(ctx, name) for name in (q, k, node.inputs[2])]
    if None in parts or len({x for x, _, _ in parts}) != 1:
        return None
    # with a cache the op's own positions start at P: the RotaryEmbedding positions then go in
    cached = len(node.inputs) > 3 and bool(node.inputs[3])
    per_row = rq is not None and (cached or not _prompt_positions(ctx, rq[0], shape(ctx, q)[1] if shape(ctx, q) else None))
    if per_row and not (len(node.inputs) > 16 and node.inputs[16]):
        return None  # without query_seqlens onnxruntime reads position_ids[0, 0] only
    q_shape = shape(ctx, q)
    if rq is not None and (q_shape is None or (q_shape[-1] // node.attributes["num_heads"]) % 16):
        return None  # onnxruntime's rotary inside the op wants a head size multiple of 16
    g = ctx.g
    ks = {shape(ctx, w)[1 if t else 0] for _, w, t in parts}
    if len({g.get_type(w) for _, w, _ in parts}) != 1 or len(ks) != 1:
        return None
    new = [ctx.node("MatMul", [parts[0][0], _packed_weight(g, parts)], 1)]
    inputs = [new[0].outputs[0], "", "", *node.inputs[3:7], *(rq[1:] if rq else ("", "")), *node.inputs[9:]]
    if per_row:
        inputs[7:10] = [*_table_rows(ctx, rq[1:], node.inputs[6], new), rq[0]]
    attributes = dict(node.attributes)
    if rq is not None:
        attributes["do_rotary"] = 1
    return [*new, ctx.node(node.op_type, inputs, node.outputs, domain=node.domain, **attributes)]


def _table_rows(ctx, tables, total: str, new: list) -> list[str]:
    """The (R, H/2) rotary tables with ``total_sequence_length`` zero rows appended:
    onnxruntime wants at least that many rows whatever position_ids read (the added rows
    are never read)."""
    g = ctx.g

    def add(*args, **kwargs) -> str:
        node = ctx.node(*args, **kwargs)
        new.append(node)
        return node.outputs[0]

    def const(*values) -> str:
        return g.make_initializer("", np.array(values, dtype=np.int64))

    rows = add("Reshape", [add("Cast", [total], 1, to=TensorProto.INT64), const(1)], 1)
    pads = add("Concat", [const(0, 0), rows, const(0)], 1, axis=0)
    return [add("Pad", [table, pads], 1) for table in tables]


REWRITES = (
    RewriteRule("gqa_repeat_kv", "GroupQueryAttention", gqa_repeat_kv, domain=MS_DOMAIN),
    RewriteRule("gqa_packed_qkv", "GroupQueryAttention", gqa_packed_qkv, domain=MS_DOMAIN),
)
