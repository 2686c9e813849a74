"""The attention bias of a genai folder read from ``attention_mask`` directly.

transformers builds the mask of a step with a KV cache as ``causal & padding`` over the
(B, 1, S, T) grid of queries and keys: ``kv_idx <= q_idx`` with ``q_idx = arange(S) + past``
and ``kv_idx = arange(T)``, ``T = past + S``; and ``attention_mask[b, kv_idx]`` gathered at
every grid point. The ortcontrib pack turns that mask into GroupQueryAttention's bias as
torch computes it (0 / -inf, rows with no visible key set to 0 and their output zeroed),
about 40 small nodes a step, and reads the op's lengths from the bias' shape.

GroupQueryAttention with a cache applies the causal part itself (``causal=1``, the keys
``j <= i + T - S``), which is exactly transformers' causal term here. What is left is the
padding, one row of keys per batch entry: the bias is ``where(attention_mask[b, j], 0,
-inf)`` expanded over the S queries (the op wants a bias of S rows), and the op's lengths
are the mask's (``T`` its length, as onnxruntime-genai passes it and the builder's graphs
read it). A query row that sees no key (left padding) keeps its -inf row: with ``causal=1``
the op's softmax gives that row 0 weight everywhere, so its output is 0, torch's value,
with no NaN (measured on onnxruntime 1.31.1 and 1.32.0; only 1.32 runs this cached op, see
ortcontrib's ``_target``; tests/transformers_pack/test_export_llm_graph.py asserts it on the
installed one). So the pack's per-layer zeroing Mul goes too.
Two rules rewrite the bias of every layer and drop each layer's zeroing, to the same
values on every input (they fire only on that exact structure).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from ._rules import MS_DOMAIN, constant, producer, rules_pack


def padding_bias_pack() -> Any:
    """A pack (for ``Dispatcher(extra_packs=[...])``) with the two stage-1 rules."""
    from tonnx.converters import RewriteRule

    made: dict = {}  # per (graph, mask): the new bias and lengths, shared by layers

    def bias(ctx, node):
        return attention_from_padding(ctx, node, made)

    def zeroing(ctx, node):
        return zeroing_dropped(ctx, node, made)

    rules = [
        # above position_tables and skip_norm (300; skip_norm matches other Muls): each rewrites
        # its node, the other then sees the result
        RewriteRule("padding_bias", "GroupQueryAttention", bias, domain=MS_DOMAIN, stage=1, priority=310),
        RewriteRule("padding_zeroing", "Mul", zeroing, stage=1, priority=305),
    ]
    return rules_pack("llm_padding_bias", "export-llm: GroupQueryAttention's bias from attention_mask alone", rules)


# -- matching transformers' mask --------------------------------------------------------------


def _is_scalar(ctx, name: str, value: float) -> bool:
    c = constant(ctx, name)
    return c is not None and c.size == 1 and float(c.reshape(-1)[0]) == value


def _arange(ctx, name: str):
    """(n, offset) when ``name`` is ``Range(0, n, 1)`` (1-D) or ``Add(Range(0, n, 1), offset)``
    with a 0-d offset."""
    offset = None
    add = producer(ctx, name, "Add")
    if add is not None:
        name, offset = add.inputs
        if producer(ctx, name, "Range") is None:
            name, offset = offset, name
    rng = producer(ctx, name, "Range")
    if rng is None or not _is_scalar(ctx, rng.inputs[0], 0) or not _is_scalar(ctx, rng.inputs[2], 1):
        return None
    if offset is not None and _is_scalar(ctx, offset, 0):
        offset = None
    if offset is not None and ctx.g.get_shape(offset) != ():
        return None  # a 0-d offset keeps the range 1-D
    return rng.inputs[1], offset


def _grid(ctx, name: str, axis: int):
    """(n, offset) when ``name`` is a 4-D ``arange(n) + offset`` along ``axis``, size 1 elsewhere."""
    shape = ctx.g.get_shape(name)
    if shape is None or len(shape) != 4 or any(d != 1 for i, d in enumerate(shape) if i != axis):
        return None
    while (node := producer(ctx, name, "Unsqueeze")) is not None:
        name = node.inputs[0]
    return _arange(ctx, name)


def _same_sum(ctx, total: str, a: str, b: str) -> bool:
    add = producer(ctx, total, "Add")
    return add is not None and sorted(add.inputs) == sorted((a, b))


def _causal(ctx, name: str):
    """(S, the key grid) when ``name`` is ``LessOrEqual(arange(T) on axis 3, arange(S) + past
    on axis 2)`` with ``T = past + S``: GroupQueryAttention's own causal mask with a cache."""
    le = producer(ctx, name, "LessOrEqual")
    if le is None:
        return None
    keys, queries = _grid(ctx, le.inputs[0], 3), _grid(ctx, le.inputs[1], 2)
    if keys is None or queries is None or keys[1] is not None or queries[1] is None:
        return None
    (total, _), (length, past) = keys, queries
    return (length, le.inputs[0]) if _same_sum(ctx, total, past, length) else None


def _padding(ctx, name: str, keys: str):
    """(attention_mask as bool) when ``name`` is ``GatherND(Cast(attention_mask, BOOL),
    Concat(b grid, kv grid))``: ``attention_mask[b, kv_idx]`` at every (b, 0, i, j)."""
    gather = producer(ctx, name, "GatherND")
    cast = gather and producer(ctx, gather.inputs[0], "Cast")
    concat = gather and producer(ctx, gather.inputs[1], "Concat")
    if cast is None or concat is None or cast.attributes.get("to") != TensorProto.BOOL:
        return None
    g = ctx.g
    mask = cast.inputs[0]
    if mask not in g.inputs or len(g.get_shape(mask) or ()) != 2 or gather.attributes.get("batch_dims", 0):
        return None
    if len(concat.inputs) != 2 or concat.attributes.get("axis") not in (-1, 4):
        return None
    parts = []
    for part in concat.inputs:
        unsq = producer(ctx, part, "Unsqueeze")
        expand = unsq and producer(ctx, unsq.inputs[0], "Expand")
        axes = unsq and constant(ctx, unsq.inputs[1])
        if expand is None or axes is None or [int(a) for a in axes.reshape(-1)] not in ([-1], [4]):
            return None
        parts.append(expand.inputs[0])
    batch = _grid(ctx, parts[0], 0)
    if batch is None or batch[1] is not None or parts[1] != keys:
        return None
    return cast.outputs[0]


def _hf_mask(ctx, name: str):
    """(mask bool (B, T), S, float type) when ``name`` is ``Where(causal & padding, 0, -inf)``."""
    where = producer(ctx, name, "Where")
    if where is None or not _is_scalar(ctx, where.inputs[1], 0) or not _is_scalar(ctx, where.inputs[2], -np.inf):
        return None
    conj = producer(ctx, where.inputs[0], "And")
    if conj is None:
        return None
    for a, b in (conj.inputs, conj.inputs[::-1]):
        causal = _causal(ctx, a)
        if causal is not None:
            length, keys = causal
            mask = _padding(ctx, b, keys)
            return None if mask is None else (mask, length, ctx.g.get_type(name))
    return None


def _dead_rows_zeroed(ctx, name: str):
    """W when ``name`` is ``Where(IsInf(ReduceMax(W, -1, keepdims)), 0, W)`` (the pack's
    fully masked rows set to 0)."""
    where = producer(ctx, name, "Where")
    isinf = where and producer(ctx, where.inputs[0], "IsInf")
    if isinf is None or not _is_scalar(ctx, where.inputs[1], 0) or isinf.attributes.get("detect_positive", 1):
        return None
    reduce = producer(ctx, isinf.inputs[0], "ReduceMax")
    return where.inputs[2] if _reduced_last(ctx, reduce, where.inputs[2]) else None


def _reduced_last(ctx, reduce, source: str) -> bool:
    axes = reduce and constant(ctx, reduce.inputs[1]) if reduce and len(reduce.inputs) > 1 else None
    return (
        reduce is not None and reduce.inputs[0] == source and axes is not None
        and [int(a) for a in axes.reshape(-1)] in ([-1], [3]) and reduce.attributes.get("keepdims", 1) == 1
    )


# -- the replacement ----------------------------------------------------------------------------


class _Parts:
    """The new bias and lengths of one mask, made once, read by every layer.

    Lengths come from ``attention_mask`` (B, T) and the query length S: the cache's own
    length is not read, so a genai folder may share its past and present buffers (a cache
    of ``max_length`` rows updated in place, whose shape says nothing of the tokens in it).
    onnxruntime-genai's mask is always ``past + S`` long; transformers computes T the same
    for such inputs."""

    def __init__(self, ctx, mask: str, length: str, float_type: int):
        self.ctx, self.nodes = ctx, []
        g = ctx.g
        floats = onnx.helper.tensor_dtype_to_np_dtype(float_type)

        def const(value, dtype=np.int64) -> str:
            return g.make_initializer("", np.array(value, dtype=dtype))

        keys = self._add("Where", [self._add("Unsqueeze", [mask, const([1, 2])]), const(0.0, floats),
                                   const(-np.inf, floats)])  # (B, 1, 1, T)
        rows = self._add("Concat", [const([1, 1]), self._add("Unsqueeze", [length, const([0])]), const([1])], axis=0)
        self.bias = self._add("Expand", [keys, rows])  # (B, 1, S, T)
        batch = self._add("Shape", [mask], start=0, end=1)
        self.total = self._add("Cast", [self._add("Squeeze", [self._add("Shape", [mask], start=1, end=2), const([0])])],
                               to=TensorProto.INT32)
        self.seqlens = self._add("Expand", [self._add("Sub", [self.total, const(1, np.int32)]), batch])
        self.queries = self._add("Expand", [self._add("Cast", [length], to=TensorProto.INT32), batch])

    def _add(self, op_type: str, inputs: list[str], **attributes) -> str:
        node = self.ctx.node(op_type, inputs, 1, **attributes)
        self.nodes.append(node)
        return node.outputs[0]

    def take(self) -> list:
        """The nodes still to place (placed with the first rule that uses them)."""
        nodes, self.nodes = self.nodes, []
        return nodes


def _parts(ctx, made: dict, found) -> _Parts:
    key = (id(ctx.g), *found)
    if key not in made:
        made[key] = _Parts(ctx, *found)
    return made[key]


def attention_from_padding(ctx, node, made: dict):
    """GroupQueryAttention (cache, causal) whose bias is transformers' mask -> its bias,
    lengths and query lengths from ``attention_mask``, ``T``, ``S`` and ``B``."""
    found = _rewritable(ctx, node)
    if not found:
        return None
    parts = _parts(ctx, made, found)
    inputs = list(node.inputs)
    inputs[5], inputs[6], inputs[10], inputs[16] = parts.seqlens, parts.total, parts.bias, parts.queries
    return [*parts.take(), ctx.node(node.op_type, inputs, node.outputs, domain=node.domain, **node.attributes)]


def _cached_causal(node) -> bool:
    a = node.attributes
    return a.get("causal") == 1 and len(node.inputs) >= 17 and bool(node.inputs[3]) and bool(node.inputs[16])


def _rewritable(ctx, node):
    """(mask, S, float type) of transformers' mask when :func:`attention_from_padding`
    rewrites the GroupQueryAttention ``node``, else None."""
    if not _cached_causal(node):
        return None
    mask_bias = _dead_rows_zeroed(ctx, node.inputs[10])
    found = mask_bias and _hf_mask(ctx, mask_bias)
    return found if found and _lengths_of(ctx, node, node.inputs[10]) else None


def _lengths_of(ctx, node, bias: str) -> bool:
    """The op's lengths are the pack's, read from the bias' shape (B, 1, S, T): T - 1, T, S."""
    def dims(name: str) -> set[str]:
        """The results whose Shape ``name`` is computed from (None: a graph input too)."""
        found, stack, seen = set(), [name], set()
        while stack:
            name = stack.pop()
            n = ctx.producer(name)
            if name in seen or ctx.g.is_constant(name):
                continue
            seen.add(name)
            if n is None:
                found.add(None)
            elif n.op_type == "Shape":
                found.add(n.inputs[0])
            else:
                stack.extend(i for i in n.inputs if i)
        return found

    return all(dims(node.inputs[i]) == {bias} for i in (5, 6, 16))


def zeroing_dropped(ctx, node, made: dict):
    """``Mul(GroupQueryAttention output, Squeeze(Cast(Not(IsInf(ReduceMax(mask bias))), 1))``,
    the pack's zeroing of the query rows that see no key, -> the op's output as it is,
    when the op is one :func:`attention_from_padding` rewrites or has rewritten: its -inf
    rows already give 0 (module docstring)."""
    for out, factor in (node.inputs, node.inputs[::-1]):
        attention = ctx.producer(out)
        if attention is None or attention.op_type != "GroupQueryAttention" or attention.domain != MS_DOMAIN:
            continue
        found = _zeroing_factor(ctx, factor)
        if found and out == attention.outputs[0] and _biased_by(ctx, attention, found, made):
            return [ctx.node("Identity", [out], node.outputs)]
    return None


def _zeroing_factor(ctx, name: str):
    """transformers' mask (as :func:`_hf_mask`) when ``name`` is ``Squeeze(Cast(Not(IsInf(
    ReduceMax(mask bias, -1, keepdims)))), 1)``, the pack's 0/1 factor of each query row."""
    squeeze = producer(ctx, name, "Squeeze")
    cast = squeeze and producer(ctx, squeeze.inputs[0], "Cast")
    negated = cast and producer(ctx, cast.inputs[0], "Not")
    isinf = negated and producer(ctx, negated.inputs[0], "IsInf")
    reduce = isinf and not isinf.attributes.get("detect_positive", 1) and producer(ctx, isinf.inputs[0], "ReduceMax")
    if not reduce or not _reduced_last(ctx, reduce, reduce.inputs[0]):
        return None
    axes = constant(ctx, squeeze.inputs[1]) if len(squeeze.inputs) > 1 else None
    if axes is None or [int(x) for x in axes.reshape(-1)] != [1]:
        return None
    found = _hf_mask(ctx, reduce.inputs[0])
    return found if found and cast.attributes.get("to") == found[-1] else None


def _biased_by(ctx, attention, found, made: dict) -> bool:
    """``attention`` reads the bias of ``found``'s mask: rewritten by this module already,
    or one :func:`attention_from_padding` rewrites."""
    parts = made.get((id(ctx.g), *found))
    if parts is not None and _cached_causal(attention) and attention.inputs[10] == parts.bias:
        return True
    return _rewritable(ctx, attention) == found
