"""Reference kernels of the pack's ``com.microsoft`` ops, for onnx's reference evaluator.

tonnx loads them through ``PackSpec.reference_kernels``, so ``tonnx.testing.run_reference``
and the ``onnx_debug_backend`` run the pack's graphs without onnxruntime. They follow
onnxruntime's documented semantics (ContribOperators.md) for exactly what the pack emits:
a prompt without past (``seqlens_k = S - 1``, ``total_sequence_length = S``) or S new tokens
after a cache of P (``past_key``/``past_value``, ``seqlens_k = P + S - 1``,
``total_sequence_length = P + S``, ``query_seqlens = S``, ``causal=1``: query s sees keys
up to P + s; rotary at ``position_ids``), float32, rotary halves not interleaved. Any other
attribute or input raises ``NotImplementedError`` naming it: a reference must not guess.
"""

from __future__ import annotations

import numpy as np
from onnx.reference.op_run import OpRun

from . import MS_DOMAIN

# GroupQueryAttention's inputs by position (onnxruntime's schema)
_GQA_INPUTS = (
    "query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length",
    "cos_cache", "sin_cache", "position_ids", "attention_bias", "head_sink", "k_scale",
    "v_scale", "q_norm_weight", "k_norm_weight", "query_seqlens",
)  # fmt: skip
_GQA_USED = {
    "query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length",
    "cos_cache", "sin_cache", "position_ids", "attention_bias", "query_seqlens",
}  # fmt: skip
_GQA_ATTRIBUTES = {"num_heads", "kv_num_heads", "causal", "scale", "do_rotary"}
# attributes the pack never sets, accepted only at the value that turns their feature off
_GQA_OFF = {
    "local_window_size": (-1,), "softcap": (0.0,), "qk_output": (0,), "rotary_interleaved": (0,),
    "smooth_softmax": (-1, 0), "sliding_window_cache": (0,), "k_quant_type": ("NONE",),
    "v_quant_type": ("NONE",),
}  # fmt: skip
# the SwiGLU the pack emits (interleaved); the other attributes at their off value
_MOE_OFF = {"activation_type": ("swiglu",), "swiglu_fusion": (1,), "use_sparse_mixer": (0,)}
_ROTARY_OFF = {"interleaved": (0,), "rotary_embedding_dim": (0,), "is_packed_batching": (0,), "scale": (1.0,)}


def _unsupported(op: str, what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{op} reference kernel (tonnx-ortcontrib): {what} is not implemented; the kernel covers "
        "what the pack emits. Run the model with onnxruntime instead."
    )


def _check_attributes(op: str, attributes: dict, used: set, off: dict) -> None:
    for name, value in attributes.items():
        if name not in used and value not in off.get(name, ()):
            value = value.item() if isinstance(value, np.generic) else value
            raise _unsupported(op, f"attribute {name}={value!r}")


def _check_float32(op: str, name: str, x: np.ndarray) -> None:
    if x.dtype != np.float32:
        raise _unsupported(op, f"{name} of dtype {x.dtype} (float32 only)")


def _rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotary embedding on halves (not interleaved): ``x1 cos - x2 sin, x2 cos + x1 sin``.

    ``cos`` and ``sin`` hold the half-width angles, broadcastable to ``x[..., :H/2]``.
    """
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


class RotaryEmbedding(OpRun):
    """``com.microsoft.RotaryEmbedding``: 3-D (B, S, N*H) input with ``num_heads`` or 4-D
    (B, N, S, H), 2-D ``position_ids`` (B, S) indexing (max_pos, H/2) cos/sin caches."""

    op_domain = MS_DOMAIN
    # onnx's evaluator would otherwise take the schema (and the attribute defaults) of the
    # standard-domain RotaryEmbedding, found by class name whatever the domain
    op_schema = None

    def _run(self, x, position_ids, cos_cache, sin_cache, **attributes):
        op = "RotaryEmbedding"
        _check_attributes(op, attributes, {"num_heads"}, _ROTARY_OFF)
        if x.dtype not in (np.float32, np.float16):
            raise _unsupported(op, f"input of dtype {x.dtype} (float32 and float16 only)")
        if position_ids.ndim != 2:
            raise _unsupported(op, f"position_ids of rank {position_ids.ndim} (only (batch, sequence))")
        if position_ids.size and not (0 <= position_ids.min() and position_ids.max() < cos_cache.shape[0]):
            raise ValueError(f"{op}: position_ids outside the {cos_cache.shape[0]} rows of cos_cache.")
        heads = int(attributes.get("num_heads", 0))
        if x.ndim == 3:
            if heads <= 0:
                raise _unsupported(op, "a 3-D input without num_heads")
            b, s, hidden = x.shape
            bnsh = x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)
        elif x.ndim == 4:
            bnsh = x
        else:
            raise ValueError(f"{op}: input of rank {x.ndim}, expected 3 or 4.")
        if 2 * cos_cache.shape[-1] != bnsh.shape[-1]:
            raise _unsupported(op, f"a rotary dimension {2 * cos_cache.shape[-1]} != head size {bnsh.shape[-1]}")
        if cos_cache.shape[0] < bnsh.shape[2]:  # onnxruntime rejects it too
            raise ValueError(f"{op}: cos_cache has {cos_cache.shape[0]} rows, fewer than the {bnsh.shape[2]} positions.")
        # (B, 1, S, H/2): one angle row per (batch, position), shared by the heads; float16
        # computed in float32 and rounded once, as onnxruntime's CPU kernel does
        cos, sin = (c[position_ids][:, None].astype(np.float32) for c in (cos_cache, sin_cache))
        out = _rotate(bnsh.astype(np.float32), cos, sin).astype(x.dtype)
        if x.ndim == 3:
            out = out.transpose(0, 2, 1, 3).reshape(x.shape)
        return (out,)


def _gqa_inputs(args: tuple) -> dict:
    """The given inputs by name; an input the kernel does not cover raises."""
    if len(args) > len(_GQA_INPUTS):
        raise ValueError(f"GroupQueryAttention: {len(args)} inputs, the schema has {len(_GQA_INPUTS)}.")
    given = {name: a for name, a in zip(_GQA_INPUTS, args) if a is not None}
    extra = [name for name in _GQA_INPUTS if name in given and name not in _GQA_USED]
    if extra:
        raise _unsupported("GroupQueryAttention", f"input {', '.join(extra)}")
    return given


def _split_heads(x: np.ndarray, heads: int, size: int) -> np.ndarray:
    """(B, S, N*H) -> (B, N, S, H)."""
    b, s, _ = x.shape
    return x.reshape(b, s, heads, size).transpose(0, 2, 1, 3)


def _qkv(given: dict, heads: int, kv_heads: int):
    """(q, k, v) as (B, N|Nkv, S, H), from separate inputs or the packed query."""
    query, key, value = given["query"], given.get("key"), given.get("value")
    if (key is None) != (value is None):
        raise ValueError("GroupQueryAttention: key and value must be both given or both empty (packed query).")
    for name in ("query", "key", "value"):
        if name in given:
            _check_float32("GroupQueryAttention", name, given[name])
    if key is None:
        size = query.shape[-1] // (heads + 2 * kv_heads)
        cuts = np.cumsum([heads * size, kv_heads * size])
        query, key, value = np.split(query, cuts, axis=-1)
    else:
        size = query.shape[-1] // heads
    q = _split_heads(query, heads, size)
    return q, _split_heads(key, kv_heads, size), _split_heads(value, kv_heads, size)


def _scalar(x) -> int:
    return int(np.asarray(x).reshape(-1)[0])


def _past_length(given: dict, length: int, kv_length: int, causal: int) -> int:
    """P, the cached tokens in front of the S new ones: 0 for a prompt without past, else
    the cache's length, with the lengths the pack gives (every row full: no padding)."""
    op = "GroupQueryAttention"
    if kv_length != length:
        raise _unsupported(op, f"a key length {kv_length} != query length {length}")
    seqlens, total = given["seqlens_k"], _scalar(given["total_sequence_length"])
    if ("past_key" in given) != ("past_value" in given):
        raise ValueError(f"{op}: past_key and past_value must be both given or both empty.")
    if "past_key" not in given:
        if "query_seqlens" in given or "position_ids" in given:
            raise _unsupported(op, "query_seqlens or position_ids without past_key/past_value")
        if total != length or not (seqlens == length - 1).all():
            raise _unsupported(
                op,
                f"seqlens_k={seqlens.tolist()}, total_sequence_length={total} with {length} new tokens "
                "(padding; without a cache only seqlens_k = S - 1 and total_sequence_length = S)",
            )
        return 0
    for name in ("past_key", "past_value"):
        _check_float32(op, name, given[name])
    past = given["past_key"].shape[2]
    queries = given.get("query_seqlens")
    if not causal or queries is None or not (queries == length).all():
        raise _unsupported(op, "a cache without causal=1 and query_seqlens = S for every row")
    if total != past + length or not (seqlens == past + length - 1).all():
        raise _unsupported(
            op,
            f"seqlens_k={seqlens.tolist()}, total_sequence_length={total} with a cache of {past} and "
            f"{length} new tokens (only seqlens_k = P + S - 1 and total_sequence_length = P + S)",
        )
    return past


def _rotary(given: dict, q, k, do_rotary: int, past: int):
    """q and k rotated (when do_rotary) at ``position_ids``, else at P..P+S-1 (onnxruntime's
    positions for S new tokens after P cached ones)."""
    has_cache = "cos_cache" in given or "sin_cache" in given
    if not do_rotary:
        if has_cache or "position_ids" in given:
            raise _unsupported("GroupQueryAttention", "cos_cache/sin_cache/position_ids with do_rotary=0")
        return q, k
    if do_rotary != 1 or not ("cos_cache" in given and "sin_cache" in given):
        raise ValueError(f"GroupQueryAttention: do_rotary={do_rotary} needs do_rotary=1 and cos_cache and sin_cache.")
    cos, sin = given["cos_cache"], given["sin_cache"]
    if 2 * cos.shape[-1] != q.shape[-1]:
        raise _unsupported("GroupQueryAttention", f"a rotary dimension {2 * cos.shape[-1]} != head size {q.shape[-1]}")
    length = q.shape[2]
    if cos.shape[0] < past + length:  # onnxruntime rejects it too
        raise ValueError(f"GroupQueryAttention: cos_cache has {cos.shape[0]} rows, fewer than the {past + length} tokens.")
    positions = given.get("position_ids")
    if positions is None:
        positions = np.arange(past, past + length)[None]
    elif positions.shape != q.shape[:1] + q.shape[2:3]:
        raise ValueError(f"GroupQueryAttention: position_ids of shape {positions.shape}, expected (batch, sequence).")
    elif positions.size and not (0 <= positions.min() and positions.max() < cos.shape[0]):
        raise ValueError(f"GroupQueryAttention: position_ids outside the {cos.shape[0]} rows of cos_cache.")
    cos, sin = cos[positions][:, None], sin[positions][:, None]  # (B|1, 1, S, H/2)
    return _rotate(q, cos, sin), _rotate(k, cos, sin)


def _attention(q, k, v, bias, causal: int, scale: float) -> np.ndarray:
    """softmax(q k^T * scale + bias, causal) v in float64; (B, N, S, H). The causal mask
    is aligned on the last key: query s of S sees keys up to T - S + s of T."""
    group = q.shape[1] // k.shape[1]
    k, v = (np.repeat(t.astype(np.float64), group, axis=1) for t in (k, v))
    scores = q.astype(np.float64) @ k.transpose(0, 1, 3, 2) * scale
    if bias is not None:
        _check_float32("GroupQueryAttention", "attention_bias", bias)
        b, n, length, size = scores.shape
        if bias.ndim != 4 or bias.shape[0] not in (1, b) or bias.shape[1] not in (1, n) or bias.shape[2:] != (length, size):
            raise ValueError(
                f"GroupQueryAttention: attention_bias of shape {bias.shape}, expected ({b}|1, {n}|1, {length}, {size})."
            )
        scores = scores + bias
    if causal:
        length, size = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((length, size), dtype=np.bool_), size - length), scores, -np.inf)
    with np.errstate(invalid="ignore"):  # a row with every key masked is NaN, as in onnxruntime
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v


class GroupQueryAttention(OpRun):
    """``com.microsoft.GroupQueryAttention`` for a prompt without past or new tokens after a
    full cache: separate or packed query/key/value, grouped heads, ``causal``, ``scale``,
    ``attention_bias`` and rotary inside the op (``do_rotary``, halves, ``position_ids``);
    outputs (B, S, N*H) and the (B, Nkv, P + S, H) present key (the past, then the new
    keys rotated) and value."""

    op_domain = MS_DOMAIN
    op_schema = None

    def _run(self, *args, **attributes):
        op = "GroupQueryAttention"
        _check_attributes(op, attributes, _GQA_ATTRIBUTES, _GQA_OFF)
        heads, kv_heads = int(attributes["num_heads"]), int(attributes["kv_num_heads"])
        causal = int(attributes.get("causal", 1))
        if causal not in (0, 1) or heads % kv_heads:
            raise ValueError(f"{op}: causal={causal}, num_heads={heads}, kv_num_heads={kv_heads}.")
        given = _gqa_inputs(args)
        q, k, v = _qkv(given, heads, kv_heads)
        past = _past_length(given, q.shape[2], k.shape[2], causal)
        q, k = _rotary(given, q, k, int(attributes.get("do_rotary", 0)), past)
        if past or "past_key" in given:
            k = np.concatenate([given["past_key"], k.astype(np.float32)], axis=2)
            v = np.concatenate([given["past_value"], v.astype(np.float32)], axis=2)
        scale = float(attributes.get("scale") or 0.0) or 1.0 / np.sqrt(q.shape[-1])
        out = _attention(q, k, v, given.get("attention_bias"), causal, scale)
        b, _, s, _ = q.shape
        out = out.transpose(0, 2, 1, 3).reshape(b, s, -1).astype(np.float32)
        return out, k.astype(np.float32), v.astype(np.float32)



class MoE(OpRun):
    """``com.microsoft.MoE`` as the pack emits it: (T, H) tokens, (T, E) router logits,
    softmax then top-``k`` (renormalized with ``normalize_routing_weights``), experts
    ``fc2 @ swiglu(fc1 @ x + fc1_bias) + fc2_bias`` with gate and up rows interleaved in
    ``fc1`` (E, 2I, H) (``swiglu_fusion=1``), ``swiglu = gate * sigmoid(alpha * gate) *
    (up + beta)``, gate clamped to ``swiglu_limit`` from above and up to ``[-limit, limit]``
    when it is set."""

    op_domain = MS_DOMAIN
    op_schema = None

    def _run(self, x, router_probs, fc1, fc1_bias=None, fc2=None, fc2_bias=None, *rest, **attributes):
        op = "MoE"
        used = {"k", "normalize_routing_weights", "activation_alpha", "activation_beta", "swiglu_limit"}
        _check_attributes(op, attributes, used, _MOE_OFF)
        if any(r is not None for r in rest):
            raise _unsupported(op, "a third weight or quantization inputs")
        for name, value in (("input", x), ("router_probs", router_probs), ("fc1", fc1), ("fc2", fc2)):
            _check_float32(op, name, value)
        alpha = 1.0 if attributes.get("activation_alpha") is None else attributes["activation_alpha"]
        beta = 0.0 if attributes.get("activation_beta") is None else attributes["activation_beta"]
        limit = attributes.get("swiglu_limit")
        probs = np.exp(router_probs - router_probs.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        k = int(attributes["k"])
        experts = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
        weights = np.take_along_axis(probs, experts, axis=-1)
        if attributes.get("normalize_routing_weights"):
            weights = weights / weights.sum(axis=-1, keepdims=True)
        out = np.zeros_like(x)
        for t in range(x.shape[0]):
            for slot in range(k):
                e = experts[t, slot]
                h = fc1[e] @ x[t] + (0 if fc1_bias is None else fc1_bias[e])
                gate, up = h[0::2], h[1::2]
                if limit is not None:
                    gate, up = np.minimum(gate, limit), np.clip(up, -limit, limit)
                y = fc2[e] @ (gate / (1 + np.exp(-alpha * gate)) * (up + beta))
                out[t] += weights[t, slot] * (y + (0 if fc2_bias is None else fc2_bias[e]))
        return (out.astype(np.float32),)


KERNELS = (GroupQueryAttention, RotaryEmbedding, MoE)
