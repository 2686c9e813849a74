"""Local rewrites that give runtimes the patterns their kernels and fusions expect.

- ``Mul(x, Reciprocal(y))`` becomes ``Div(x, y)``: one rounding instead of two (at least
  as accurate; it may differ from torch's ``x * rsqrt(v)`` by one ulp), and it is the
  spelling onnxruntime fuses into ``SimplifiedLayerNormalization`` (RMSNorm).
- ``Transpose(Transpose(x))`` becomes one ``Transpose`` (an ``Identity`` when the
  permutations cancel): exact.
- ``BatchNormalization(Conv(x, W, b))`` with constant parameters becomes one ``Conv``
  with scaled weights (what every runtime does at load; it rounds the fused weights once,
  so numbers may move by an ulp against torch's two ops).
- A constant all-zero bias is dropped: ``Gemm(a, b, 0)`` loses its ``C``, ``Add(x, 0)``
  becomes ``Identity(x)`` when the zeros do not broadcast ``x`` to a larger shape
  (exact but for the sign of a zero: ``-0 + 0`` is ``+0``); so does ``And(x, True)``.
- ``Unsqueeze(Unsqueeze(x))`` becomes one ``Unsqueeze`` (HF's attention masks unsqueeze
  each index vector three times, one axis at a time): exact.

Each rewrite only fires when the inner node has no other reader, so nothing is computed
twice; the inner node is then dead and dropped by ``remove_unused``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from onnx import TensorProto

from tonnx.builder._passes import _all_reads


def rewrite_peepholes(g) -> int:
    """Applies the rewrites above in one sweep; returns how many fired."""
    producer = {o: node for node in g.nodes for o in node.outputs if o}
    readers = Counter(_all_reads(g))
    readers.update(g.outputs)
    fired = 0
    for node in g.nodes:
        if node.domain:
            continue
        if node.op_type == "Mul":
            fired += _mul_reciprocal(node, producer, readers)
        elif node.op_type == "Transpose":
            fired += _transpose_transpose(node, producer, readers)
        elif node.op_type == "Gemm" and len(node.inputs) == 3:
            fired += _gemm_zero_bias(g, node)
        elif node.op_type == "Add":
            fired += _add_zero(g, node)
        elif node.op_type == "And":
            fired += _and_true(g, node)
        elif node.op_type == "Unsqueeze":
            fired += _unsqueeze_unsqueeze(g, node, producer, readers)
        elif node.op_type == "BatchNormalization":
            fired += _batchnorm_into_conv(g, node, producer, readers)
    return fired


def _single_use(name: str, op_type: str, producer: dict, readers: Counter):
    inner = producer.get(name)
    if inner is None or inner.op_type != op_type or inner.domain or readers[name] != 1:
        return None
    return inner


def _mul_reciprocal(node, producer: dict, readers: Counter) -> int:
    a, b = node.inputs
    for x, r in ((a, b), (b, a)):
        inner = _single_use(r, "Reciprocal", producer, readers)
        if inner is not None and x != r:
            node.op_type = "Div"
            node.inputs = [x, inner.inputs[0]]
            readers[r] -= 1
            readers[inner.inputs[0]] += 1
            return 1
    return 0


def _transpose_transpose(node, producer: dict, readers: Counter) -> int:
    inner = _single_use(node.inputs[0], "Transpose", producer, readers)
    if inner is None or "perm" not in inner.attributes or "perm" not in node.attributes:
        return 0
    first, second = inner.attributes["perm"], node.attributes["perm"]
    perm = [first[axis] for axis in second]
    readers[node.inputs[0]] -= 1
    readers[inner.inputs[0]] += 1
    node.inputs = [inner.inputs[0]]
    if perm == sorted(perm):
        node.op_type, node.attributes = "Identity", {}
    else:
        node.attributes = {**node.attributes, "perm": perm}
    return 1


def _gemm_zero_bias(g, node) -> int:
    if not g.is_zero_constant(node.inputs[2]):
        return 0
    node.inputs = node.inputs[:2]
    return 1


def _add_zero(g, node) -> int:
    for x, zero in (node.inputs, reversed(node.inputs)):
        if g.is_zero_constant(zero) and _broadcasts_into(g.get_shape(zero), g.get_shape(x)):
            if g.get_type(zero) == g.get_type(x):
                node.op_type, node.inputs = "Identity", [x]
                return 1
    return 0


def _and_true(g, node) -> int:
    for x, true in (node.inputs, reversed(node.inputs)):
        if g.is_constant(true) and _broadcasts_into(g.get_shape(true), g.get_shape(x)):
            if g.get_constant(true).all():
                node.op_type, node.inputs = "Identity", [x]
                return 1
    return 0


def _unsqueeze_axes(g, node) -> list[int] | None:
    """The axes of an Unsqueeze (input from opset 13, attribute before), None if not constant."""
    if len(node.inputs) > 1:
        return [int(a) for a in g.get_constant(node.inputs[1]).reshape(-1)] if g.is_constant(node.inputs[1]) else None
    axes = node.attributes.get("axes")
    return None if axes is None else [int(a) for a in axes]


def _unsqueeze_unsqueeze(g, node, producer: dict, readers: Counter) -> int:
    inner = _single_use(node.inputs[0], "Unsqueeze", producer, readers)
    shape = None if inner is None else g.get_shape(inner.inputs[0])
    if shape is None:
        return 0
    first, second = _unsqueeze_axes(g, inner), _unsqueeze_axes(g, node)
    if first is None or second is None:
        return 0
    middle, rank = len(shape) + len(first), len(shape) + len(first) + len(second)
    second = sorted(a % rank for a in second)
    # the output's axes that are not the second's are the middle tensor's axes, in order
    kept = [a for a in range(rank) if a not in second]
    combined = sorted([*second, *(kept[a % middle] for a in first)])
    readers[node.inputs[0]] -= 1
    readers[inner.inputs[0]] += 1
    if len(node.inputs) > 1:
        node.inputs = [inner.inputs[0], g.make_initializer("", np.array(combined, dtype=np.int64))]
    else:
        node.inputs = [inner.inputs[0]]
        node.attributes = {**node.attributes, "axes": combined}
    return 1


def _broadcasts_into(small, shape) -> bool:
    """True when ``small`` broadcast against ``shape`` leaves ``shape`` unchanged."""
    if small is None or shape is None or len(small) > len(shape):
        return False
    return all(d == 1 or d == s for d, s in zip(reversed(small), reversed(shape)))


def _batchnorm_into_conv(g, node, producer: dict, readers: Counter) -> int:
    conv = _single_use(node.inputs[0], "Conv", producer, readers)
    if conv is None or len(node.outputs) != 1 or node.attributes.get("training_mode", 0):
        return 0
    params = [*conv.inputs[1:], *node.inputs[1:]]
    if not all(g.is_constant(p) and g.get_type(p) == TensorProto.FLOAT for p in params):
        return 0
    scale, shift, mean, var = (g.get_constant(p).astype(np.float64) for p in node.inputs[1:])
    factor = scale / np.sqrt(var + node.attributes.get("epsilon", 1e-5))
    weight = g.get_constant(conv.inputs[1])
    bias = g.get_constant(conv.inputs[2]) if len(conv.inputs) > 2 else np.zeros(len(factor))
    fused_weight = weight * factor.reshape((-1,) + (1,) * (weight.ndim - 1))
    fused_bias = (bias - mean) * factor + shift
    conv.inputs = [
        conv.inputs[0],
        g.make_initializer("", fused_weight.astype(np.float32), dedup=False),
        g.make_initializer("", fused_bias.astype(np.float32)),
    ]
    node.op_type, node.inputs, node.attributes = "Identity", [node.inputs[0]], {}
    return 1
