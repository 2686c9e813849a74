"""Rotary tables of a genai folder as constants: no cos/sin computed at each step.

After the ortcontrib pack's fusions, rotary embeddings run inside ``GroupQueryAttention``
(``do_rotary=1``) from tables computed at every step: HF's ``cos(position * inv_freq) *
scaling`` for the step's own positions, flattened to one row per token and read back with
``position_ids = b * S + s`` (about 13 small nodes a step). onnxruntime-genai never runs a
position at or past ``context_length`` (its ``max_length`` is at most that), so a folder
can hold the tables for every position ``0 .. context_length - 1`` instead, and the op
reads row ``position_ids[b, s]`` itself, as the builder's models do.

The rule fires only on that exact pattern: the angles are ``Cast(position_ids) * inv_freq``
with ``inv_freq`` a constant and ``position_ids`` the graph input, then ``Cos``/``Sin``
and optionally a constant scalar scaling and a Cast. The constant tables are computed by
torch with the same float32 operations as the model's forward (one product per entry,
then cos or sin, then the scaling), so each entry is the one torch computes for that
position. A model whose tables depend on anything else (dynamic rope scaling reads the
sequence length) keeps the per-step tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto

from ._rules import MS_DOMAIN, constant, producer, rules_pack

_FLOATS = {TensorProto.FLOAT: "float32", TensorProto.FLOAT16: "float16"}


def position_tables_pack(rows: int) -> Any:
    """A pack (for ``Dispatcher(extra_packs=[...])``) whose stage-1 rule puts constant
    rotary tables of ``rows`` positions in every GroupQueryAttention with ``do_rotary``."""
    from tonnx.converters import RewriteRule

    made: dict = {}  # one table per (graph, inv_freq, function, scaling, dtype): layers share it

    def rewrite(ctx, node):
        return constant_tables(ctx, node, rows, made)

    rule = RewriteRule("position_tables", "GroupQueryAttention", rewrite, domain=MS_DOMAIN, stage=1)
    return rules_pack("llm_position_tables", f"export-llm: rotary tables of {rows} positions as constants", [rule])


def constant_tables(ctx, node, rows: int, made: dict):
    """GroupQueryAttention whose cos/sin inputs are per-step tables of the positions ->
    the same op reading constant tables of ``rows`` positions at ``position_ids``."""
    if not node.attributes.get("do_rotary") or len(node.inputs) < 10:
        return None
    cos, sin = (_table(ctx, node.inputs[i]) for i in (7, 8))
    if cos is None or sin is None or cos[0] != "Cos" or sin[0] != "Sin":
        return None
    if cos[1:4] != sin[1:4] or not _row_index(ctx, node.inputs[9], cos[1]):
        return None
    positions, inv_freq = cos[2], ctx.g.get_constant(cos[3])
    inputs = list(node.inputs)
    for i, function, found in ((7, np.cos, cos), (8, np.sin, sin)):
        key = (id(ctx.g), inv_freq.tobytes(), function.__name__, *found[4:])
        if key not in made:
            made[key] = _constant(ctx, rows, inv_freq, function, *found[4:])
        inputs[i] = made[key]
    inputs[9] = positions
    return [ctx.node(node.op_type, inputs, node.outputs, domain=node.domain, **node.attributes)]


def _scalar(ctx, name: str) -> float | None:
    value = constant(ctx, name)
    return float(value.reshape(-1)[0]) if value is not None and value.size == 1 and value.dtype == np.float32 else None


def _table(ctx, name: str):
    """(Cos|Sin, angles, position_ids, inv_freq, scaling, dtype) for ``Pad(Reshape(Cast?(Mul?(
    Cos|Sin(Mul(Cast(Unsqueeze(position_ids, -1)), inv_freq)), scaling)), (-1, h)))``."""
    pad = producer(ctx, name, "Pad")
    rows = pad and producer(ctx, pad.inputs[0], "Reshape")
    if rows is None:
        return None
    x = rows.inputs[0]
    dtype = ctx.g.get_type(x)
    cast = producer(ctx, x, "Cast")
    if cast is not None:
        x = cast.inputs[0]
    scaling = 1.0
    mul = producer(ctx, x, "Mul")
    if mul is not None:
        scaling = _scalar(ctx, mul.inputs[1])
        if scaling is None:
            return None
        x = mul.inputs[0]
    trig = ctx.producer(x)
    if trig is None or trig.op_type not in ("Cos", "Sin") or trig.domain:
        return None
    angles = _angles(ctx, trig.inputs[0])
    if angles is None or dtype not in _FLOATS or ctx.g.get_type(trig.inputs[0]) != TensorProto.FLOAT:
        return None
    return (trig.op_type, trig.inputs[0], *angles, scaling, dtype)


def _angles(ctx, name: str):
    """(position_ids, inv_freq) for ``Mul(Cast(Unsqueeze(position_ids, -1), FLOAT), inv_freq)``
    (either operand order), ``inv_freq`` a 1-D float32 constant, ``position_ids`` the
    (B, S) int64 graph input."""
    mul = producer(ctx, name, "Mul")
    if mul is None:
        return None
    g = ctx.g
    for a, b in (mul.inputs, mul.inputs[::-1]):
        if not g.is_constant(b) or g.get_constant(b).ndim != 1 or g.get_type(b) != TensorProto.FLOAT:
            continue
        cast = producer(ctx, a, "Cast")
        unsq = cast and cast.attributes.get("to") == TensorProto.FLOAT and producer(ctx, cast.inputs[0], "Unsqueeze")
        if not unsq or not g.is_constant(unsq.inputs[1]):
            continue
        positions = unsq.inputs[0]
        axes = [int(v) for v in g.get_constant(unsq.inputs[1]).reshape(-1)]
        if positions in g.inputs and g.get_type(positions) == TensorProto.INT64 and \
                len(g.get_shape(positions) or ()) == 2 and axes in ([-1], [2]):
            return positions, b
    return None


def _row_index(ctx, name: str, angles: str) -> bool:
    """``name`` is ``Reshape(Range(0, ReduceProd(sizes), 1), sizes)`` with ``sizes =
    Shape(angles, 0, 2)``: the row of each (b, s) token in the per-step tables."""
    reshape = producer(ctx, name, "Reshape")
    rng = reshape and producer(ctx, reshape.inputs[0], "Range")
    count = rng and producer(ctx, rng.inputs[1], "ReduceProd")
    sizes = reshape and producer(ctx, reshape.inputs[1], "Shape")
    if not count or not sizes or count.inputs[0] != reshape.inputs[1] or count.attributes.get("keepdims", 1):
        return False
    if sizes.inputs[0] != angles or sizes.attributes.get("start", 0) != 0 or sizes.attributes.get("end") != 2:
        return False
    start, delta = constant(ctx, rng.inputs[0]), constant(ctx, rng.inputs[2])
    return start is not None and delta is not None and int(start) == 0 and int(delta) == 1


def _constant(ctx, rows: int, inv_freq: np.ndarray, function, scaling: float, dtype: int) -> str:
    """``function(position * inv_freq) * scaling`` for positions ``0 .. rows - 1``, computed
    by torch in float32 as the model does, then cast to the graph's table type."""
    import torch

    angles = torch.arange(rows, dtype=torch.float32)[:, None] * torch.from_numpy(inv_freq)[None, :]
    table = (torch.cos(angles) if function is np.cos else torch.sin(angles)) * scaling
    return ctx.g.make_initializer("", table.to(getattr(torch, _FLOATS[dtype])).numpy(), dedup=False)
