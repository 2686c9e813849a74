"""Proofs, on the FX graph, that an attention mask never lets a query see a later key.

GroupQueryAttention with a key cache applies its own causal mask (``causal=1``, the only
setting onnxruntime accepts with ``query_seqlens``): query row ``s`` of ``S`` new tokens sees
the keys ``j <= s + T - S`` of ``T``. The result equals torch's only if the mask torch
uses already hides every later key. HF builds its masks as a conjunction, one term of which
is ``kv_idx <= q_idx`` with ``kv_idx = arange(T) + kv_offset`` along the last axis and
``q_idx = arange(S) + past`` along the query axis; :func:`within_causal` finds that term
and proves ``q_offset - kv_offset <= T - S`` with torch's symbolic shapes, without guards.
Anything else (a mask computed another way, a float mask) is not proven: no fusion.
"""

from __future__ import annotations

import sys

import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true

_aten = torch.ops.aten
_AND = {_aten.__and__.Tensor, _aten.bitwise_and.Tensor, _aten.logical_and.default}
# ops that keep values as they are when the dtype does not change (or widens an index)
_COPIES = {
    _aten.to.dtype, _aten.to.dtype_layout, _aten.to.device, _aten._to_copy.default,
    _aten.clone.default, _aten.alias.default,
}  # fmt: skip
_INDEX_TYPES = {torch.int64, torch.int32}
_SLICE_DEFAULTS = (None, 0, None, None, 1)


def _val(x):
    return x.meta.get("val") if isinstance(x, torch.fx.Node) else x


def _known(condition) -> bool:
    return bool(statically_known_true(condition))


def _full_slice(node) -> bool:
    """``x[..., 0:end]`` with ``end`` past the axis: the tensor itself."""
    x, dim, start, end, step = (*node.args, *_SLICE_DEFAULTS[len(node.args) :])
    size = _val(x).shape[dim]
    return start in (0, None) and step == 1 and (end is None or end == sys.maxsize or _known(end >= size))


def _index(node):
    """(axis, rank, offset): ``node``'s value is its index along ``axis`` plus ``offset``
    (an int or SymInt), the same along every other axis; None when not proven."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return None
    target, args = node.target, node.args
    value = _val(node)
    if value is None or getattr(value, "dtype", None) not in _INDEX_TYPES:
        return None
    if target is _aten.arange.default:
        return 0, 1, 0
    if target is _aten.arange.start and len(args) == 2:
        return 0, 1, args[0]
    if target is _aten.arange.start_step and len(args) == 3 and args[2] == 1:
        return 0, 1, args[0]
    inner = _index(args[0]) if args else None
    if inner is None:
        return None
    axis, rank, offset = inner
    if target in (_aten.add.Tensor, _aten.sub.Tensor) and len(args) == 2 and node.kwargs.get("alpha", 1) == 1:
        other = _val(args[1])
        if not isinstance(other, (int, torch.SymInt)):
            return None
        return axis, rank, offset + other if target is _aten.add.Tensor else offset - other
    if target is _aten.unsqueeze.default:
        dim = args[1] if args[1] >= 0 else args[1] + rank + 1
        return axis + (dim <= axis), rank + 1, offset
    if target is _aten.slice.Tensor and _full_slice(node):
        return inner
    if target is _aten.expand.default and _known(value.shape[value.dim() - rank + axis] == _val(args[0]).shape[axis]):
        return axis + value.dim() - rank, value.dim(), offset
    if target in _COPIES and getattr(_val(args[0]), "dtype", None) in _INDEX_TYPES:
        return inner
    return None


def _bounding_offset(node, shape):
    """``q_offset - kv_offset`` when ``node`` is ``kv_idx <= q_idx`` (or ``q_idx >= kv_idx``)
    with kv_idx indexing the last axis of ``shape`` and q_idx the one before it."""
    if node.target is _aten.le.Tensor:
        kv, q = node.args
    elif node.target is _aten.ge.Tensor:
        q, kv = node.args
    else:
        return None
    found_kv, found_q = _index(kv), _index(q)
    if found_kv is None or found_q is None:
        return None
    (kv_axis, kv_rank, kv_offset), (q_axis, q_rank, q_offset) = found_kv, found_q
    if kv_axis - kv_rank != -1 or q_axis - q_rank != -2:
        return None
    # the index tensors must span the axes, not be broadcast along them
    if not (_known(_val(kv).shape[kv_axis] == shape[-1]) and _known(_val(q).shape[q_axis] == shape[-2])):
        return None
    return q_offset - kv_offset


def within_causal(mask, query, key) -> bool:
    """True when the bool ``mask`` (an FX node) provably hides every key ``j > s + T - S``
    from query row ``s`` (``S`` query rows, ``T`` keys: the shapes of the FX values)."""
    length, size = _val(query).shape[-2], _val(key).shape[-2]
    stack = [mask]
    while stack:
        node = stack.pop()
        value = _val(node)
        if not isinstance(node, torch.fx.Node) or node.op != "call_function" or value is None:
            continue
        if value.dtype != torch.bool or value.dim() < 2:
            continue
        # every position of the mask maps to the same (query, key) position here
        if not (_known(value.shape[-2] == length) and _known(value.shape[-1] == size)):
            continue
        if node.target in _AND:
            stack.extend(node.args[:2])
        elif node.target in _COPIES or node.target is _aten.expand.default:
            if getattr(_val(node.args[0]), "dtype", None) == torch.bool:
                stack.append(node.args[0])
        else:
            offset = _bounding_offset(node, value.shape)
            if offset is not None and _known(offset <= size - length):
                return True
    return False
