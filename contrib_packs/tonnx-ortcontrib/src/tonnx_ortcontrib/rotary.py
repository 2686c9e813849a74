"""Rotary embeddings written as HF's ``q * cos + rotate_half(q) * sin`` -> ``RotaryEmbedding``.

``rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2])``; after conversion that is
``Add(Mul(x, cos), Mul(Concat(Neg(Slice(x, D/2:)), Slice(x, :D/2)), sin))``, seven
kernels per query or key of every layer, one here.

onnxruntime's op takes half-width tables indexed by position: ``cache[position_ids[b, s]]``.
HF's tables are computed at run time as ``cos(cat(freqs, freqs))`` (times a constant
attention scaling), so both halves are equal: the rule proves it on the graph (or on the
constant) and uses the first half, flattened to ``(B'*S, D/2)`` rows with
``position_ids = b' * S + s``: the op then reads exactly torch's table entry. When the
rotated tensor is HF's ``Transpose(Reshape(proj, (B, S, N, H)))``, the op runs on the
(B, S, N*H) projection itself and the layout pairs around the fused attention cancel.
"""

from __future__ import annotations

import numpy as np

from tonnx.converters import RewriteRule

from . import MS_DOMAIN
from ._patterns import constant, last_axis, producer_of, same, scalar, shape, source

_BIG = 2**62
_BSNH = [0, 2, 1, 3]


def _halves_equal(ctx, name: str) -> bool:
    """True when the table's two halves along the last axis are provably equal."""
    value = constant(ctx, name)
    if value is not None:
        h = value.shape[-1] // 2
        return value.shape[-1] % 2 == 0 and np.array_equal(value[..., :h], value[..., h:])
    name, node = source(ctx, name)
    rank = len(shape(ctx, name) or ())
    while node is not None and not node.domain:
        op = node.op_type
        if op == "Unsqueeze":
            axes = constant(ctx, node.inputs[1])
            if axes is None or any(int(a) in (-1, rank - 1) for a in axes.reshape(-1)):
                return False
        elif op in ("Mul", "Div"):
            if scalar(ctx, node.inputs[1]) is None:
                if op == "Div" or scalar(ctx, node.inputs[0]) is None:
                    return False
                name, node = source(ctx, node.inputs[1])
                continue
        elif op == "Concat":
            return (
                len(node.inputs) == 2
                and node.inputs[0] == node.inputs[1]
                and node.attributes.get("axis") in (-1, rank - 1)
            )
        elif op not in ("Cos", "Sin", "Cast"):
            return False
        name, node = source(ctx, node.inputs[0])
        rank = len(shape(ctx, name) or ()) or rank
    return False


def _slice_of(ctx, name: str, x: str, half: int, first: bool) -> bool:
    """``name`` is ``x[..., :half]`` (first) or ``x[..., half:]``."""
    node = producer_of(ctx, name, "Slice")
    if node is None or node.inputs[0] != x or len(node.inputs) < 4:
        return False
    starts, ends = constant(ctx, node.inputs[1]), constant(ctx, node.inputs[2])
    steps = constant(ctx, node.inputs[4]) if len(node.inputs) > 4 else np.ones(1)
    if starts is None or ends is None or steps is None or steps.size != 1 or int(steps[0]) != 1:
        return False
    if not last_axis(ctx, node.inputs[3], 4) or starts.size != 1:
        return False
    start, end = int(starts[0]), int(ends[0])
    return (start, end) == (0, half) if first else (start == half and end >= 2 * half)


def _rotated_half(ctx, name: str, x: str, half: int) -> bool:
    """``name`` is ``rotate_half(x)``."""
    cat = producer_of(ctx, name, "Concat")
    if cat is None or len(cat.inputs) != 2 or cat.attributes.get("axis") not in (-1, 3):
        return False
    neg = producer_of(ctx, cat.inputs[0], "Neg")
    return neg is not None and _slice_of(ctx, neg.inputs[0], x, half, False) and _slice_of(
        ctx, cat.inputs[1], x, half, True
    )


def _table_fits(ctx, table: str, x_shape) -> bool:
    """(B'|1, 1, S, D) with B' the batch or 1: one row of angles per (batch, position)."""
    t = shape(ctx, table)
    if t is None or len(t) != 4 or t[1] != 1 or not same(t[2], x_shape[2]) or not same(t[3], x_shape[3]):
        return False
    return t[0] == 1 or same(t[0], x_shape[0])


def _match(ctx, node):
    """(x, cos, sin) when ``node`` is the Add of HF's rotary embedding, else None."""
    muls = [producer_of(ctx, i, "Mul") for i in node.inputs]
    if None in muls:
        return None
    for plain, rotated in (muls, muls[::-1]):
        for x, cos in (plain.inputs, plain.inputs[::-1]):
            x_shape = shape(ctx, x)
            if x_shape is None or len(x_shape) != 4 or type(x_shape[3]) is not int or x_shape[3] % 2:
                continue
            half = x_shape[3] // 2
            for rot, sin in (rotated.inputs, rotated.inputs[::-1]):
                if _rotated_half(ctx, rot, x, half) and _table_fits(ctx, cos, x_shape) and _table_fits(ctx, sin, x_shape):
                    if _halves_equal(ctx, cos) and _halves_equal(ctx, sin):
                        return x, cos, sin
    return None


def _int64(ctx, values) -> str:
    return ctx.g.make_initializer("", np.array(values, dtype=np.int64))


def _half_chain(ctx, table: str):
    """(f, nodes) when ``table`` is ``Concat(f, f)`` on the last axis followed by the
    element-wise ``nodes`` (Cos, Sin, Cast, Mul or Div by a scalar) and Unsqueezes
    before the last axis (HF's ``cos(cat(freqs, freqs)) * scaling``): the first half of
    the table is those nodes applied to ``f``. None otherwise."""
    chain = []
    name, node = source(ctx, table)
    rank = len(shape(ctx, name) or ())
    while node is not None and not node.domain:
        op = node.op_type
        if op == "Concat":
            if len(node.inputs) == 2 and node.inputs[0] == node.inputs[1] and node.attributes.get("axis") in (-1, rank - 1):
                return node.inputs[0], chain
            return None
        if op == "Unsqueeze":
            axes = constant(ctx, node.inputs[1])
            if axes is None or any(int(a) in (-1, rank - 1) for a in axes.reshape(-1)):
                return None
        elif op in ("Mul", "Div"):
            if scalar(ctx, node.inputs[1]) is None and (op == "Div" or scalar(ctx, node.inputs[0]) is None):
                return None
            chain.append(node)
        elif op in ("Cos", "Sin", "Cast"):
            chain.append(node)
        else:
            return None
        name, node = source(ctx, node.inputs[_data_input(ctx, node) if op != "Unsqueeze" else 0])
        rank = len(shape(ctx, name) or ()) or rank
    return None


def _cache(ctx, table: str, half: int, new: list) -> str:
    """The table's first half as (B'*S, D/2) rows: computed from the half HF repeats
    when the table is made that way (half the work, no Concat or Slice), else sliced."""
    found = _half_chain(ctx, table)
    if found is None:
        first = ctx.node("Slice", [table, _int64(ctx, [0]), _int64(ctx, [half]), _int64(ctx, [-1])], 1)
        new.append(first)
        x = first.outputs[0]
    else:
        x, chain = found
        for node in reversed(chain):
            inputs = [x if i == _data_input(ctx, node) else name for i, name in enumerate(node.inputs)]
            replayed = ctx.node(node.op_type, inputs, 1, **node.attributes)
            new.append(replayed)
            x = replayed.outputs[0]
    rows = ctx.node("Reshape", [x, _int64(ctx, [-1, half])], 1)
    new.append(rows)
    return rows.outputs[0]


def _data_input(ctx, node) -> int:
    """Which input of an element-wise node of the table's chain carries the table."""
    return 1 if node.op_type == "Mul" and scalar(ctx, node.inputs[1]) is None else 0


def _dim(ctx, x: str, axis: int, new: list) -> str:
    d = shape(ctx, x)[axis]
    if type(d) is int:
        return _int64(ctx, [d])
    node = ctx.node("Shape", [x], 1, start=axis, end=axis + 1)
    new.append(node)
    return node.outputs[0]


def _positions(ctx, x: str, table: str, new: list, seq_axis: int = 2) -> str:
    """(B, S) int64 row index into the flattened tables: ``b' * S + s``; ``x`` has the
    batch on axis 0 and the positions on ``seq_axis``."""
    b, s = shape(ctx, x)[0], shape(ctx, x)[seq_axis]
    per_batch = shape(ctx, table)[0] != 1
    if type(b) is int and type(s) is int:
        rows = np.arange(b * s if per_batch else s, dtype=np.int64).reshape(-1, s)
        return ctx.g.make_initializer("", np.broadcast_to(rows, (b, s)).copy())

    def add(*args, **kwargs) -> str:
        node = ctx.node(*args, **kwargs)
        new.append(node)
        return node.outputs[0]

    size = _dim(ctx, x, seq_axis, new)
    bs = add("Concat", [_dim(ctx, x, 0, new), size], 1, axis=0)
    count = add("ReduceProd", [bs], 1, keepdims=1) if per_batch else size
    n = add("Squeeze", [count, _int64(ctx, [0])], 1)
    zero, one = (ctx.g.make_initializer("", np.array(v, dtype=np.int64)) for v in (0, 1))
    rng = add("Range", [zero, n, one], 1)
    grid = add("Reshape", [rng, bs if per_batch else _int64(ctx, [1, -1])], 1)
    return add("Expand", [grid, bs], 1)


def _table_positions(ctx, table: str, new: list) -> str:
    """(B, S) int64 ``b * S + s`` for a (B, 1, S, D) table (a row per batch entry), the
    sizes read from the (B, S, D/2) half HF repeats when there is one (nothing then keeps
    the full table alive)."""
    b, _, s, _ = shape(ctx, table)
    if type(b) is int and type(s) is int:
        return ctx.g.make_initializer("", np.arange(b * s, dtype=np.int64).reshape(b, s))

    def add(*args, **kwargs) -> str:
        node = ctx.node(*args, **kwargs)
        new.append(node)
        return node.outputs[0]

    found = _half_chain(ctx, table)
    half = shape(ctx, found[0]) if found else None
    from_half = half is not None and len(half) == 3 and same(half[0], b) and same(half[1], s)
    sizes = add("Shape", [found[0] if from_half else table], 1, start=0, end=2 if from_half else 3)
    count = add("ReduceProd", [sizes], 1, keepdims=0)
    zero, one = (ctx.g.make_initializer("", np.array(v, dtype=np.int64)) for v in (0, 1))
    grid = add("Reshape", [add("Range", [zero, count, one], 1), sizes], 1)
    return grid if from_half else add("Squeeze", [grid, _int64(ctx, [1])], 1)


def _projection(ctx, x: str):
    """(proj, reshape target) when ``x`` is ``Transpose(Reshape(proj, (B, S, N, H)))``."""
    t = producer_of(ctx, x, "Transpose")
    if t is None or list(t.attributes.get("perm", ())) != _BSNH:
        return None
    r = producer_of(ctx, t.inputs[0], "Reshape")
    if r is None or r.attributes.get("allowzero"):
        return None
    proj, mid = shape(ctx, r.inputs[0]), shape(ctx, r.outputs[0])
    if proj is None or mid is None or len(proj) != 3 or len(mid) != 4:
        return None
    if not (same(proj[0], mid[0]) and same(proj[1], mid[1]) and type(proj[2]) is int):
        return None
    if proj[2] != mid[2] * mid[3]:
        return None
    return r.inputs[0], r.inputs[1]


def rotary_embedding(ctx, node):
    """``x * cos + rotate_half(x) * sin`` -> ``com.microsoft.RotaryEmbedding``."""
    found = _match(ctx, node)
    if found is None:
        return None
    x, cos, sin = found
    if not same(shape(ctx, cos)[0], shape(ctx, sin)[0]):
        return None
    half = shape(ctx, x)[3] // 2
    new: list = []
    projected = _projection(ctx, x)
    # sizes read from the table when it has a row per batch entry (one computation for
    # every layer), else from the projection the op runs on (nothing then keeps the
    # (B, N, S, H) transposed copy alive)
    if shape(ctx, cos)[0] != 1:
        positions = _table_positions(ctx, cos, new)
    else:
        positions = _positions(ctx, x, cos, new) if projected is None else _positions(ctx, projected[0], cos, new, 1)
    inputs = [positions, _cache(ctx, cos, half, new), _cache(ctx, sin, half, new)]
    if projected is None:
        rot = ctx.node("RotaryEmbedding", [x, *inputs], node.outputs, domain=MS_DOMAIN)
        ctx.g.set_type(node.outputs[0], ctx.g.get_type(x))
        return [*new, rot]
    proj, target = projected
    rot = ctx.node("RotaryEmbedding", [proj, *inputs], 1, domain=MS_DOMAIN, num_heads=shape(ctx, x)[1])
    ctx.g.set_type(rot.outputs[0], ctx.g.get_type(x))
    ctx.g.set_shape(rot.outputs[0], shape(ctx, proj))
    heads = ctx.node("Reshape", [rot.outputs[0], target], 1)
    ctx.g.set_shape(heads.outputs[0], tuple(shape(ctx, x)[i] for i in _BSNH))
    out = ctx.node("Transpose", [heads.outputs[0]], node.outputs, perm=_BSNH)
    return [*new, rot, heads, out]


REWRITES = (RewriteRule("rotary_embedding", "Add", rotary_embedding),)
