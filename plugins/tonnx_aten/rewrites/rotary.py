"""HF's rotary embedding ``x * cos + rotate_half(x) * sin`` -> ``RotaryEmbedding`` (opset 23).

``rotate_half(x) = cat(-x[..., H/2:], x[..., :H/2])``; after conversion the embedding is
``Add(Mul(x, cos), Mul(Concat(Neg(Slice(x, H/2:)), Slice(x, :H/2)), sin))`` on
(B, N, S, H) heads, the layout the op takes. Per output element that is
``x1 * c - x2 * s`` and ``x2 * c + x1 * s``: the op's formula (non-interleaved).

The op takes half-width tables (B, S, H/2) where HF's are (B|1, 1, S, H), computed as
``cos(cat(freqs, freqs))`` (times a scalar attention scaling): the rule proves the two
halves equal on the graph (or on a constant table) and replays the table's element-wise
chain on ``freqs`` itself, so the full-width Cos/Sin and the Concat disappear. A table
with one row for the whole batch is expanded to the batch (onnxruntime wants (B, S, H/2)).

Partial rotary (Phi, GPT-NeoX: ``cat(rope(x[..., :r]), x[..., r:])``) becomes one op with
``rotary_embedding_dim=r``. GPT-J's interleaved form (``stack(-x2, x1).flatten`` with
``repeat_interleave``'d tables) is not matched: it keeps its primitive ops.
"""

from __future__ import annotations

import numpy as np

from ._patterns import (
    applies,
    constant,
    int64,
    ints,
    only_read_by_pattern,
    producer,
    same,
    scalar,
    shape,
)

_ELEMENTWISE = ("Cos", "Sin", "Cast")


def _last_axis_slice(ctx, name: str, x: str):
    """(start, end) of ``name = x[..., start:end]`` (step 1, last axis), else None."""
    node = producer(ctx, name, "Slice")
    if node is None or node.inputs[0] != x or len(node.inputs) < 4:
        return None
    starts, ends, axes = (ints(ctx, node.inputs[i]) for i in (1, 2, 3))
    steps = ints(ctx, node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] else [1]
    rank = len(shape(ctx, x) or ())
    if None in (starts, ends, axes, steps) or len(starts) != 1 or steps != [1]:
        return None
    if len(axes) != 1 or axes[0] % max(rank, 1) != rank - 1:
        return None
    return starts[0], ends[0]


def _rotated_half(ctx, name: str, x: str, half: int) -> bool:
    """``name`` is ``cat(-x[..., half:], x[..., :half])``."""
    cat = producer(ctx, name, "Concat")
    if cat is None or len(cat.inputs) != 2 or cat.attributes.get("axis") not in (-1, 3):
        return False
    neg = producer(ctx, cat.inputs[0], "Neg")
    if neg is None:
        return False
    second = _last_axis_slice(ctx, neg.inputs[0], x)
    first = _last_axis_slice(ctx, cat.inputs[1], x)
    return first == (0, half) and second is not None and second[0] == half and second[1] >= 2 * half


def _scalar(ctx, name: str) -> bool:
    """A one-element constant that broadcasts without adding axes."""
    return scalar(ctx, name) is not None and len(shape(ctx, name) or ()) <= 1


def _data_input(ctx, node) -> int:
    """Which input of an element-wise node of the table's chain carries the table."""
    return 1 if node.op_type == "Mul" and not _scalar(ctx, node.inputs[1]) else 0


def _half_chain(ctx, table: str):
    """(freqs, chain) when ``table`` is ``Concat(freqs, freqs)`` on the last axis followed
    by element-wise nodes (Cos, Sin, Cast, Mul or Div by a scalar) and Unsqueezes of
    other axes: the table's first half is ``chain`` applied to ``freqs``. Else None."""
    chain, node = [], ctx.producer(table)
    rank = len(shape(ctx, table) or ())
    while node is not None and not node.domain:
        op = node.op_type
        if op == "Concat":
            ok = len(node.inputs) == 2 and node.inputs[0] == node.inputs[1]
            ok = ok and node.attributes.get("axis") in (-1, rank - 1)
            return (node.inputs[0], chain) if ok else None
        if op == "Unsqueeze":
            axes = ints(ctx, node.inputs[1])
            if axes is None or any(a % rank == rank - 1 for a in axes):
                return None
            rank -= len(axes)
        elif op in ("Mul", "Div") and _scalar(ctx, node.inputs[1]):
            chain.append(node)
        elif op == "Mul" and _scalar(ctx, node.inputs[0]):
            chain.append(node)
        elif op in _ELEMENTWISE:
            chain.append(node)
        else:
            return None
        node = ctx.producer(node.inputs[_data_input(ctx, node)])
    return None


def _half_table(ctx, table: str, x: str, half: int, new: list) -> str | None:
    """The (B, S, half) first half of the (B|1, 1, S, 2 * half) ``table``, or None when
    its halves are not provably equal."""
    t = shape(ctx, table)
    b = shape(ctx, x)[0]
    value = constant(ctx, table)
    if value is not None:
        if not np.array_equal(value[..., :half], value[..., half:]):
            return None
        result = ctx.g.make_initializer("", np.ascontiguousarray(value[:, 0, :, :half]))
    else:
        found = _half_chain(ctx, table)
        if found is None:
            return None
        result, chain = found
        f = shape(ctx, result)
        if f is None or len(f) != 3 or not same(f[0], t[0]) or not same(f[1], t[2]) or f[2] != half:
            return None
        for node in reversed(chain):
            data = _data_input(ctx, node)
            inputs = [result if i == data else n for i, n in enumerate(node.inputs)]
            replayed = ctx.node(node.op_type, inputs, 1, **node.attributes)
            ctx.g.set_shape(replayed.outputs[0], f)
            new.append(replayed)
            result = replayed.outputs[0]
    if same(t[0], b):
        return result
    return _expanded(ctx, result, x, new)


def _expanded(ctx, half: str, x: str, new: list) -> str:
    """A (1, S, H/2) table broadcast to x's batch: the op reads one row per batch entry."""
    b = shape(ctx, x)[0]
    if type(b) is int:
        target = int64(ctx, [b, 1, 1])
    else:
        size = ctx.node("Shape", [x], 1, start=0, end=1)
        cat = ctx.node("Concat", [size.outputs[0], int64(ctx, [1, 1])], 1, axis=0)
        new += [size, cat]
        target = cat.outputs[0]
    node = ctx.node("Expand", [half, target], 1)
    new.append(node)
    return node.outputs[0]


def _table_fits(ctx, table: str, x_shape) -> bool:
    """(B|1, 1, S, H): one row of angles per batch entry (or for all) and position."""
    t = shape(ctx, table)
    if t is None or len(t) != 4 or t[1] != 1:
        return False
    if not same(t[2], x_shape[2]) or not same(t[3], x_shape[3]):
        return False
    return t[0] == 1 or same(t[0], x_shape[0])


def _match(ctx, node):
    """(x, cos, sin) when ``node`` is the Add of HF's rotary embedding."""
    muls = [producer(ctx, i, "Mul") for i in node.inputs]
    if None in muls or not only_read_by_pattern(ctx, *node.inputs):
        return None
    for plain, rotated in (muls, muls[::-1]):
        for x, cos in (plain.inputs, plain.inputs[::-1]):
            x_shape = shape(ctx, x)
            if x_shape is None or len(x_shape) != 4 or type(x_shape[3]) is not int:
                continue
            if x_shape[3] % 2:
                continue
            for rot, sin in (rotated.inputs, rotated.inputs[::-1]):
                if not _rotated_half(ctx, rot, x, x_shape[3] // 2):
                    continue
                if _table_fits(ctx, cos, x_shape) and _table_fits(ctx, sin, x_shape):
                    return x, cos, sin
    return None


def rotary_embedding(ctx, node):
    """``x * cos + rotate_half(x) * sin`` -> ``RotaryEmbedding(x, cos_half, sin_half)``."""
    found = _match(ctx, node)
    if found is None:
        return None
    x, cos, sin = found
    if not applies(ctx, x, cos, sin, node.outputs[0]):
        return None
    half, new = shape(ctx, x)[3] // 2, []
    cos_half = _half_table(ctx, cos, x, half, new)
    sin_half = cos_half and _half_table(ctx, sin, x, half, new)
    if sin_half is None:
        return None
    return [*new, ctx.node("RotaryEmbedding", [x, cos_half, sin_half], node.outputs)]


def partial_rotary_embedding(ctx, node):
    """``cat(RotaryEmbedding(x[..., :r]), x[..., r:])`` -> one op, ``rotary_embedding_dim=r``."""
    if len(node.inputs) != 2 or node.attributes.get("axis") not in (-1, 3):
        return None
    rope = producer(ctx, node.inputs[0], "RotaryEmbedding")
    if rope is None or rope.attributes or len(rope.inputs) != 3:
        return None
    if not only_read_by_pattern(ctx, node.inputs[0]):
        return None
    rotated = producer(ctx, rope.inputs[0], "Slice")
    x = rotated and rotated.inputs[0]
    x_shape = x and shape(ctx, x)
    if not x_shape or len(x_shape) != 4 or type(x_shape[3]) is not int:
        return None
    r = _last_axis_slice(ctx, rope.inputs[0], x)
    rest = _last_axis_slice(ctx, node.inputs[1], x)
    if r is None or r[0] != 0 or not 0 < r[1] < x_shape[3] or rest is None:
        return None
    if rest[0] != r[1] or rest[1] < x_shape[3] or not only_read_by_pattern(ctx, rope.inputs[0]):
        return None
    inputs = [x, *rope.inputs[1:]]
    return [ctx.node("RotaryEmbedding", inputs, node.outputs, rotary_embedding_dim=r[1])]
