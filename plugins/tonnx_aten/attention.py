"""scaled_dot_product_attention: ONNX Attention (opset 23) or MatMul/Softmax.

torch (CPU, flash and math backends alike) computes float16/bfloat16 attention in float32
and gives 0 for a query row whose keys are all masked; the causal mask is the lower
triangle of the (L, S) matrix (top-left aligned); a mask combined with ``is_causal`` masks
what either masks. Both formulations below follow that.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, named, numpy_dtype, shape_of

#: Element types computed in float32, as torch's CPU kernels do.
_UPCAST = (TensorProto.FLOAT16, TensorProto.BFLOAT16)
_LAST = np.array([-1], dtype=np.int64)


def _same(a, b) -> bool:
    """Two dimensions known to be equal (the same int or the same symbol)."""
    return a == b and type(a) is type(b)


def _cast_keeping_shape(g, x: str, elem: int) -> str:
    """``x`` in ``elem``; the cast result keeps the (known) shape, read by the code below."""
    y = cast(g, x, elem)
    if y != x:
        g.set_shape(y, g.get_shape(x))
    return y


def _dim(g, x: str, axis: int):
    """Dimension ``axis`` of ``x``: an int when static, else a 0-d int64 result."""
    d = g.get_shape(x)[axis]
    if type(d) is int:
        return d
    return g.op.Squeeze(shape_of(g, x, axis, axis + 1 if axis != -1 else None), [0])


# -- the decomposition ----------------------------------------------------------------------


def _causal_keep(g, query: str, key: str) -> str:
    """Bool (L, S) lower triangle, torch's ``ones(L, S).tril(0)``."""
    length, size = _dim(g, query, -2), _dim(g, key, -2)
    if type(length) is int and type(size) is int:
        return g.make_initializer("", np.tril(np.ones((length, size), dtype=np.bool_)))
    rows = g.op.Unsqueeze(g.op.Range(np.array(0, np.int64), length, np.array(1, np.int64)), [1])
    cols = g.op.Range(np.array(0, np.int64), size, np.array(1, np.int64))
    return g.op.LessOrEqual(cols, rows)


def _repeat_heads(g, query: str, kv: str) -> str:
    """``kv.repeat_interleave(Hq // Hkv, dim=-3)`` (enable_gqa)."""
    hq, hkv = g.get_shape(query)[-3], g.get_shape(kv)[-3]
    if _same(hq, hkv):
        return kv
    rank = g.get_rank(kv)
    if type(hq) is int and type(hkv) is int:
        reps = np.array([hq // hkv], dtype=np.int64)
    else:
        reps = g.op.Div(shape_of(g, query, -3, -2), shape_of(g, kv, -3, -2))
    ones = np.ones(rank - 2, dtype=np.int64)
    expand = g.op.Concat(ones, reps, np.ones(2, dtype=np.int64), axis=0)
    wide = g.op.Expand(g.op.Unsqueeze(kv, [-3]), expand)
    shape = g.op.Concat(shape_of(g, kv, 0, -3), shape_of(g, query, -3, -2), shape_of(g, kv, -2), axis=0)
    return g.op.Reshape(wide, shape)


def _scaled_query(g, query: str, scale, elem: int) -> str:
    """``query * scale``; the default scale is ``1 / sqrt(E)``."""
    if scale is not None:
        return g.op.Mul(query, np.array(scale, dtype=numpy_dtype(elem)))
    e = g.get_shape(query)[-1]
    if type(e) is int:
        return g.op.Mul(query, np.array(1.0 / np.sqrt(e), dtype=numpy_dtype(elem)))
    return g.op.Div(query, g.op.Sqrt(g.op.Cast(shape_of(g, query, -1), to=elem)))


def _transposed(g, key: str, rank: int) -> str:
    return g.op.Transpose(key, perm=[*range(rank - 2), rank - 1, rank - 2])


def _without_dead_rows(g, bias: str, elem: int) -> tuple[str, str | None]:
    """(bias with its dead rows set to 0, the 0/1 factor that zeroes them after Softmax).

    torch's safe softmax gives 0, not NaN, to a query row whose keys are all masked. The
    dead rows are read off the additive bias, not the scores: the bias is the same for
    every layer and usually has a single head, so once common subexpressions are merged
    this runs once instead of scanning each layer's (B, H, L, S) scores; each layer then
    only multiplies its weights by the (B, 1, L, 1) factor, which onnxruntime broadcasts
    faster than a Where. A constant bias is checked here, at export. It differs from
    torch's check of the scores only when a row's scores are themselves infinite or NaN
    (overflowed inputs): this then gives NaN.
    """
    dtype = numpy_dtype(elem)
    if g.is_constant(bias):
        values = np.atleast_1d(g.get_constant(bias))
        dead = ~(values != -np.inf).any(axis=-1, keepdims=True)
        if not dead.any():
            return bias, None
        return np.where(dead, 0, values).astype(dtype), (~dead).astype(dtype)
    dead = g.op.IsInf(g.op.ReduceMax(bias, _LAST, keepdims=1), detect_positive=0)
    alive = g.op.Cast(g.op.Not(dead), to=elem)
    return g.op.Where(dead, np.array(0, dtype=dtype), bias), alive


def _attention_bias(g, query, key, mask, is_causal, elem) -> str | None:
    """The additive bias of the scores: the float mask, or 0/-inf where the masks say.

    As torch's math kernel does, a bool mask (and the causal mask) becomes a bias of 0 and
    ``-inf`` that is added to the scores; it has the mask's (small) shape.
    """
    bias = keep = None
    if mask is not None and g.get_type(mask) == TensorProto.BOOL:
        keep = mask
    elif mask is not None:
        bias = mask
    if is_causal:
        causal = _causal_keep(g, query, key)
        keep = causal if keep is None else g.op.And(keep, causal)
    if keep is None:
        return bias
    dtype = numpy_dtype(elem)
    kept = np.array(0, dtype=dtype) if bias is None else bias
    return g.op.Where(keep, kept, np.array(-np.inf, dtype=dtype))


def _decomposed(g, query, key, value, mask, is_causal, scale, enable_gqa, elem) -> str:
    keys, values = key, value
    if enable_gqa:
        keys, values = _repeat_heads(g, query, key), _repeat_heads(g, query, value)
    keys = _transposed(g, keys, g.get_rank(key))
    scores = g.op.MatMul(_scaled_query(g, query, scale, elem), keys)
    bias, alive = _attention_bias(g, query, key, mask, is_causal, elem), None
    if mask is not None:
        # a causal mask alone never empties a row; a user's mask may
        bias, alive = _without_dead_rows(g, bias, elem)
    if bias is not None:
        scores = g.op.Add(scores, bias)
    weights = g.op.Softmax(scores, axis=-1)
    if alive is not None:
        weights = g.op.Mul(weights, alive)
    return g.op.MatMul(weights, values)


# -- the Attention op (opset 23) ------------------------------------------------------------


def _heads_fit(hq, hkv, enable_gqa: bool) -> bool:
    """The heads of K/V map onto Q's as Attention's interleaved repeat does."""
    if _same(hq, hkv):
        return True
    if type(hq) is not int or type(hkv) is not int or hq % hkv:
        return False
    return enable_gqa or hkv == 1


def _mask_fits(mask_shape, batch, heads, length, size) -> bool:
    """The mask broadcasts to (B, Hq, L, S) the way onnxruntime accepts (1 or equal)."""
    if len(mask_shape) > 4:
        return False
    wanted = (batch, heads, length, size)[4 - len(mask_shape) :]
    return all(d == 1 or _same(d, w) for d, w in zip(mask_shape, wanted))


def _attention_fits(g, query, key, value, mask, scale, enable_gqa, elem) -> bool:
    """True when ONNX Attention computes exactly what torch does for this call."""
    if g.main_opset < 23 or elem != TensorProto.FLOAT or (scale is not None and scale <= 0):
        return False
    shapes = [g.get_shape(x) for x in (query, key, value)]
    if any(s is None or len(s) not in (3, 4) or len(s) != len(shapes[0]) for s in shapes):
        return False
    if len(shapes[0]) == 3:
        shapes = [(s[0], 1, *s[1:]) for s in shapes]
    (b, hq, length, _), (bk, hk, size, _), (bv, hv, sv, _) = shapes
    if not (_same(b, bk) and _same(b, bv) and _same(hk, hv) and _same(size, sv)):
        return False
    if not _heads_fit(hq, hk, enable_gqa):
        return False
    if mask is None:
        return True
    mask_shape = g.get_shape(mask)
    if len(g.get_shape(query)) == 3 and len(mask_shape) == 3:
        mask_shape = (mask_shape[0], 1, *mask_shape[1:])
    return _mask_fits(mask_shape, b, hq, length, size)


def _attention_mask(g, mask: str, query: str, key: str) -> str:
    """The mask of rank 2 to 4 with exactly (L, S) as last dimensions, as onnxruntime wants.

    A rank-3 mask of rank-3 inputs is (B, L, S): it gets the head axis the inputs get.
    """
    shape = g.get_shape(mask)
    rank = len(shape)
    if g.get_rank(query) == 3 and rank == 3:
        mask, rank = g.op.Unsqueeze(mask, [1]), 4
    elif rank == 1:
        mask, rank = g.op.Unsqueeze(mask, [0]), 2
    length, size = g.get_shape(query)[-2], g.get_shape(key)[-2]
    last = (1, *shape)[-2:]
    if _same(last[0], length) and _same(last[1], size):
        return mask
    ones = np.ones(rank - 2, dtype=np.int64)
    target = g.op.Concat(ones, shape_of(g, query, -2, -1), shape_of(g, key, -2, -1), axis=0)
    return g.op.Expand(mask, target)


def _attention_op(g, query, key, value, mask, is_causal, scale) -> str:
    if mask is not None:
        mask = _attention_mask(g, mask, query, key)
    rank = g.get_rank(query)
    if rank == 3:
        query, key, value = (g.op.Unsqueeze(x, [1]) for x in (query, key, value))
    attributes = {"is_causal": int(bool(is_causal))}
    if scale is not None:
        attributes["scale"] = float(scale)
    result = g.op.Attention(query, key, value, mask, **attributes)
    return g.op.Squeeze(result, [1]) if rank == 3 else result


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
    if dropout_p:
        raise UnsupportedError(
            f"scaled_dot_product_attention with dropout_p={dropout_p} is random; export the "
            f"model in eval mode or with dropout_p=0."
        )
    if enable_gqa and g.get_rank(query) < 3:
        raise UnsupportedError(
            "scaled_dot_product_attention: enable_gqa needs a head dimension (rank >= 3)."
        )
    out_type = sts.dtype
    elem = TensorProto.FLOAT if out_type in _UPCAST else out_type
    query, key, value = (_cast_keeping_shape(g, x, elem) for x in (query, key, value))
    if attn_mask is not None and g.get_type(attn_mask) != TensorProto.BOOL:
        attn_mask = _cast_keeping_shape(g, attn_mask, elem)
    if _attention_fits(g, query, key, value, attn_mask, scale, enable_gqa, elem):
        result = _attention_op(g, query, key, value, attn_mask, is_causal, scale)
    else:
        result = _decomposed(g, query, key, value, attn_mask, is_causal, scale, enable_gqa, elem)
    if elem != out_type:
        return g.op.Cast(result, to=out_type, outputs=outputs)
    return named(g, result, outputs[0])


CONVERTERS = (
    Converter("aten::scaled_dot_product_attention.default", aten_scaled_dot_product_attention),
)
