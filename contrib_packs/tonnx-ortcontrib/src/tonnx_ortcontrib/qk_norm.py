"""One projection for query, key and value through a per-head norm (Qwen3, OLMo2-style q/k norm).

Qwen3 normalizes each head of the query and the key before the rotation:
``k = rotary(transpose(norm(view(k_proj(x), (B, S, N, H)))))``. The rotary rule then runs
``RotaryEmbedding`` on the (B, N, S, H) heads and :func:`.attention.gqa_packed_qkv`, which
wants each projection to feed the rotation directly, leaves q, k and v as three MatMuls,
with two RotaryEmbeddings and four Transposes around them: 7 nodes a layer more than
onnxruntime-genai's builder writes, and at decode each node costs the executor's overhead
(measured on a Qwen3-0.6B shape in int4: docs/benchmarks.md).

This rule gives the op the builder's form: one MatMul of the three weights packed, a
Split, each of q and k reshaped to heads, normalized by the same nodes as before (replayed
on the Split's part: the values are the projection's own, so the norm computes exactly
what it did) and reshaped back to (B, S, N*H); the rotation inside the op
(``do_rotary=1``) at the RotaryEmbedding nodes' positions and tables, as
:func:`.attention.gqa_packed_qkv` does. It fires only when the norm reads nothing but the
projection's heads and constants, and both rotations share positions and tables.
"""

from __future__ import annotations

import numpy as np

from tonnx.converters import RewriteRule

from . import MS_DOMAIN
from ._patterns import constant, producer_of, same, same_value, shape
from .attention import _BSNH, _packed_weight, _projection, _prompt_positions, _table_rows

#: nodes a per-head norm may take (Qwen3's RMSNorm is 6 after conversion, 8 with Casts)
_MAX_NORM_NODES = 16


def _heads_of(ctx, name: str):
    """(projection, heads) when ``name`` is ``Reshape(proj, (B, S, N, H))`` of a
    (B, S, N*H) projection ``MatMul``, else None."""
    view = producer_of(ctx, name, "Reshape")
    if view is None or view.attributes.get("allowzero") or _projection(ctx, view.inputs[0]) is None:
        return None
    proj, heads = shape(ctx, view.inputs[0]), shape(ctx, name)
    if proj is None or heads is None or len(proj) != 3 or len(heads) != 4:
        return None
    if not (same(proj[0], heads[0]) and same(proj[1], heads[1])):
        return None
    if not all(type(d) is int for d in (proj[2], heads[2], heads[3])) or proj[2] != heads[2] * heads[3]:
        return None
    return view.inputs[0], heads[2]


def _fixed(ctx, name: str) -> bool:
    """An initializer (in memory or on ``meta``) or a constant."""
    return name in ctx.g.constants or constant(ctx, name) is not None


def _norm_chain(ctx, normed: str, heads: str) -> list | None:
    """The nodes computing ``normed`` from ``heads`` and initializers alone, in order; None
    when ``normed`` reads anything else (a graph input, another result) or takes too many."""
    order: list = []
    seen: set[int] = set()

    def visit(name: str) -> bool:
        if name == heads or _fixed(ctx, name):
            return True
        node = ctx.producer(name)
        if node is None or node.subgraphs() or len(seen) >= _MAX_NORM_NODES:
            return False
        if id(node) in seen:
            return True
        seen.add(id(node))
        if not all(visit(i) for i in node.inputs if i):
            return False
        order.append(node)
        return True

    return order if visit(normed) and order else None


def _normed_rotated(ctx, name: str):
    """For the op's query or key input ``Reshape(Transpose(RotaryEmbedding(Transpose(
    norm(view(proj))))), (0, 0, N*H))``: (proj, view, norm nodes, normed, heads, (positions,
    cos, sin)); else None."""
    packed = producer_of(ctx, name, "Reshape")
    back = packed and producer_of(ctx, packed.inputs[0], "Transpose")
    rot = back and producer_of(ctx, back.inputs[0], "RotaryEmbedding", MS_DOMAIN)
    if rot is None or list(back.attributes.get("perm", ())) != _BSNH or rot.attributes.get("interleaved"):
        return None
    if rot.attributes.get("num_heads") or len(shape(ctx, rot.inputs[0]) or ()) != 4:
        return None
    into = producer_of(ctx, rot.inputs[0], "Transpose")
    if into is None or list(into.attributes.get("perm", ())) != _BSNH:
        return None
    normed, target = into.inputs[0], constant(ctx, packed.inputs[1])
    normed_shape = shape(ctx, normed)
    if normed_shape is None or len(normed_shape) != 4 or packed.attributes.get("allowzero"):
        return None
    view_name = _view_in(ctx, normed)
    found = view_name and _heads_of(ctx, view_name)
    chain = found and _norm_chain(ctx, normed, view_name)
    if not chain or not all(same(a, b) for a, b in zip(shape(ctx, view_name), normed_shape)):
        return None
    if target is None or [int(v) for v in target.reshape(-1)] != [0, 0, normed_shape[2] * normed_shape[3]]:
        return None  # (B, N, S, H) -> (B, S, N, H) -> (B, S, N*H)
    return found[0], view_name, chain, normed, found[1], tuple(rot.inputs[1:4])


def _view_in(ctx, normed: str) -> str | None:
    """The (B, S, N, H) view of a projection among the norm's inputs (breadth first)."""
    queue, seen = [normed], set()
    while queue and len(seen) <= _MAX_NORM_NODES:
        name = queue.pop(0)
        if _heads_of(ctx, name) is not None:
            return name
        node = ctx.producer(name)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        queue.extend(i for i in node.inputs if i and not _fixed(ctx, i))
    return None


def _replayed(ctx, part: str, found, new: list) -> str:
    """The norm of ``found`` on ``part`` (B, S, N*H), back as (B, S, N*H)."""
    g = ctx.g
    _, view, chain, normed, heads, _ = found
    b, s, n, h = shape(ctx, view)
    target = g.make_initializer("", np.array([0, 0, n, h], dtype=np.int64))
    renamed = {view: _add(ctx, new, "Reshape", [part, target], (b, s, n, h), g.get_type(view))}
    for node in chain:
        inputs = [renamed.get(i, i) for i in node.inputs]
        copy = ctx.node(node.op_type, inputs, len(node.outputs), domain=node.domain, **node.attributes)
        new.append(copy)
        for old, made in zip(node.outputs, copy.outputs):
            renamed[old] = made
            if g.has_type(old):
                g.set_type(made, g.get_type(old))
            if shape(ctx, old) is not None:
                g.set_shape(made, shape(ctx, old))
    flat = g.make_initializer("", np.array([0, 0, n * h], dtype=np.int64))
    return _add(ctx, new, "Reshape", [renamed[normed], flat], (b, s, n * h), g.get_type(normed))


def _add(ctx, new: list, op_type: str, inputs: list, out_shape, elem_type) -> str:
    node = ctx.node(op_type, inputs, 1)
    new.append(node)
    ctx.g.set_type(node.outputs[0], elem_type)
    ctx.g.set_shape(node.outputs[0], out_shape)
    return node.outputs[0]


def gqa_packed_qkv_norm(ctx, node):
    """GroupQueryAttention whose query and key are rotated per-head norms of two projections
    and whose value is a third projection of the same input -> one MatMul, a Split, the
    norms on the parts, the rotation inside the op (``do_rotary=1``)."""
    if node.attributes.get("do_rotary") or len(node.inputs) < 7 or any(node.inputs[7:10]):
        return None
    found = [_normed_rotated(ctx, node.inputs[i]) for i in (0, 1)]
    if None in found:
        return None
    (_, _, _, _, heads_q, rq), (_, _, _, _, heads_k, rk) = found
    if heads_q != node.attributes["num_heads"] or heads_k != node.attributes["kv_num_heads"]:
        return None
    if not all(same_value(ctx, a, b, depth=10) for a, b in zip(rq, rk)):
        return None
    parts = [_projection(ctx, name) for name in (found[0][0], found[1][0], node.inputs[2])]
    if None in parts or len({x for x, _, _ in parts}) != 1:
        return None
    g = ctx.g
    ks = {shape(ctx, w)[1 if t else 0] for _, w, t in parts}
    if len({g.get_type(w) for _, w, _ in parts}) != 1 or len(ks) != 1:
        return None
    head = shape(ctx, found[0][1])[3]
    if head % 16 or shape(ctx, found[1][1])[3] != head:
        return None  # onnxruntime's rotary inside the op wants a head size multiple of 16
    cached = bool(node.inputs[3])
    per_row = cached or not _prompt_positions(ctx, rq[0], shape(ctx, found[0][0])[1])
    if per_row and not (len(node.inputs) > 16 and node.inputs[16]):
        return None  # without query_seqlens onnxruntime reads position_ids[0, 0] only
    new: list = []
    x = parts[0][0]
    sizes = [shape(ctx, w)[0 if t else 1] for _, w, t in parts]  # N of each weight
    b, s = shape(ctx, x)[:2]
    packed = _add(ctx, new, "MatMul", [x, _packed_weight(g, parts)], (b, s, sum(sizes)), g.get_type(x))
    split = ctx.node("Split", [packed, g.make_initializer("", np.array(sizes, dtype=np.int64))], 3, axis=-1)
    new.append(split)
    for name, size in zip(split.outputs, sizes):
        g.set_type(name, g.get_type(x))
        g.set_shape(name, (b, s, size))
    query, key = (_replayed(ctx, part, f, new) for part, f in zip(split.outputs[:2], found))
    inputs = [query, key, split.outputs[2], *node.inputs[3:7], *rq[1:], *node.inputs[9:]]
    if per_row:
        inputs[7:10] = [*_table_rows(ctx, rq[1:], node.inputs[6], new), rq[0]]
    attributes = {**node.attributes, "do_rotary": 1}
    return [*new, ctx.node(node.op_type, inputs, node.outputs, domain=node.domain, **attributes)]


REWRITES = (RewriteRule("gqa_packed_qkv_norm", "GroupQueryAttention", gqa_packed_qkv_norm, domain=MS_DOMAIN),)
