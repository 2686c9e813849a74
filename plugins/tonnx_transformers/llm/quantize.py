"""int4 / int8 weight-only quantization: the linear layers become ``com.microsoft.MatMulNBits``.

Two rewrite rules (handed to the export as a pack, :func:`quantize_pack`) replace
``MatMul(x, Transpose(W))`` (``nn.Linear``'s weight, ``[N, K]``), ``MatMul(x, W)`` (a
``[K, N]`` weight) and ``Gemm(x, W, bias)`` (GPT-2's ``Conv1D``, a linear with a bias on a
2-D input: alpha 1, beta 1, x not transposed) whose ``W`` is a 2-D float32 initializer by
``MatMulNBits(x, W_Q<bits>, W_scales[, bias])``: symmetric blockwise quantization along K
(``block_size`` 32 by default), no zero points, ``accuracy_level`` 4 as onnxruntime-genai's
builder writes for the CPU (the activations are quantized to int8 inside the kernel).

The blocks are computed by onnxruntime's own quantizer (``DefaultWeightOnlyQuantizer``, the
one the builder and ``matmul_nbits_quantizer`` use), one weight at a time:

- a weight held in memory (a model given as an object) is quantized when the rule fires;
- a weight on the ``meta`` device (a folder's model, streamed) is quantized while the model
  file is written: the rule adds ``meta`` placeholders of the quantized shapes and records
  where each comes from (:class:`QuantPlan`); :class:`QuantizingWeights` reads the weight
  from the safetensors files, quantizes it and writes its parts, then frees it. No float32
  copy of the model is ever in memory or on disk.

The embedding (a Gather) keeps its float32 table, as the builder's int4 model of an untied
model does; the lm head is a linear layer and is quantized, as the builder does. A model
whose lm head shares the embedding's tensor gathers its embeddings from the head's quantized
table (``com.microsoft.GatherBlockQuantized``, the builder's tied form): one table of
``N * K * bits / 8`` bytes instead of a float32 copy beside it (Qwen3-0.6B's 151936 x 1024
table: 78 MB in int4 instead of 78 + 622 MB). The rows are the head's dequantized weights
(exact: tests/transformers_pack/test_export_llm_precision.py), and the greedy check's
reference gathers the same (``quantized_reference.py``, ``plan.gathered``).
"""

from __future__ import annotations

import threading
from typing import Any

from tonnx.toolkit import SafetensorsWeights

from .quant_plan import (  # noqa: F401 (names this module has always given)
    BLOCK_SIZES,
    CPU_ACCURACY_LEVEL,
    DEFAULT_BLOCK_SIZE,
    MIN_ONNXRUNTIME,
    MS_DOMAIN,
    QuantPlan,
    add_parts,
)


def quantize_pack(plan: QuantPlan) -> Any:
    """A pack (for ``Dispatcher(extra_packs=[...])``) whose rewrite rules are the plan's."""
    from tonnx.converters import RewriteRule

    from ._rules import rules_pack
    from .quantize_experts import qmoe

    def rewrite(ctx, node):
        return _matmul_nbits(plan, ctx, node)

    def gemm(ctx, node):
        return _gemm_nbits(plan, ctx, node)

    def experts(ctx, node):
        return qmoe(plan, ctx, node)

    def gather(ctx, node):
        return _gather_block_quantized(plan, ctx, node)

    # stage 1: after the fusions (q/k/v packed into one MatMul, quantized as one)
    rules = [RewriteRule("matmul_nbits", "MatMul", rewrite, stage=1),
             RewriteRule("gemm_nbits", "Gemm", gemm, stage=1),
             RewriteRule("qmoe", "MoE", experts, domain=MS_DOMAIN, stage=1),
             RewriteRule("gather_block_quantized", "Gather", gather, stage=1)]
    what = (f"export-llm --precision int{plan.bits}: MatMul -> MatMulNBits, MoE -> QMoE (int4), "
            f"a tied embedding -> GatherBlockQuantized")
    return rules_pack(f"llm_int{plan.bits}", what, rules, runtime_requirements=lambda nodes: {"onnxruntime": MIN_ONNXRUNTIME})


def _matmul_nbits(plan: QuantPlan, ctx, node):
    """MatMul(x, Transpose(W)) or MatMul(x, W), W a 2-D float32 initializer -> MatMulNBits."""
    b = node.inputs[1]
    producer = ctx.producer(b)
    if producer is None:
        return _nbits(plan, ctx, node, b, "kn")
    if producer.op_type != "Transpose" or producer.domain or \
            list(producer.attributes.get("perm", [1, 0])) != [1, 0]:
        return None
    return _nbits(plan, ctx, node, producer.inputs[0], "nk")


def _gemm_nbits(plan: QuantPlan, ctx, node):
    """Gemm(x, W[, bias]) with alpha 1, beta 1, x not transposed, a 1-D bias -> MatMulNBits."""
    a = node.attributes
    if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
        return None
    if ctx.producer(node.inputs[1]) is not None:
        return None
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    return _nbits(plan, ctx, node, node.inputs[1], "nk" if a.get("transB", 0) else "kn", bias)


def _nbits(plan: QuantPlan, ctx, node, weight: str, layout: str, bias: str | None = None):
    """``node`` (computing x @ W [+ bias]) as MatMulNBits, when W is a 2-D float32 initializer."""
    from onnx import TensorProto

    g = ctx.g
    value = g.constants.get(weight)
    if weight in plan.keep_float or value is None or len(value.shape) != 2 or g.types.get(weight) != TensorProto.FLOAT:
        return None
    if g.types.get(node.inputs[0]) != TensorProto.FLOAT:
        return None
    n, k = value.shape if layout == "nk" else value.shape[::-1]
    if bias is not None and (g.types.get(bias) != TensorProto.FLOAT or tuple(g.shapes.get(bias, ())) != (n,)):
        return None
    q_name, s_name = f"{weight}_Q{plan.bits}", f"{weight}_scales"
    if g.has_name(q_name):  # a second node reading the weight: the same quantized parts
        if plan.layouts.get(q_name) != layout:
            return None
    else:
        add_parts(plan, g, weight, value, layout, (q_name, s_name), plan.shapes(k, n))
        plan.layouts[q_name] = layout
    plan.rewritten += 1
    inputs = [node.inputs[0], q_name, s_name] + (["", "", bias] if bias else [])
    return [ctx.node("MatMulNBits", inputs, node.outputs, domain=MS_DOMAIN, K=int(k), N=int(n),
                     bits=plan.bits, block_size=plan.block_size, accuracy_level=plan.accuracy_level)]


def _gather_block_quantized(plan: QuantPlan, ctx, node):
    """``Gather(W, ids, axis=0)`` of a tied table (W ``[N, K]`` also an lm head's weight: not
    in ``plan.keep_float``), K a multiple of the block -> ``GatherBlockQuantized`` reading the
    head's quantized parts, as onnxruntime-genai's builder writes a tied embedding."""
    import numpy as np
    from onnx import TensorProto

    g = ctx.g
    weight = node.inputs[0]
    value = g.constants.get(weight)
    if node.attributes.get("axis", 0) != 0 or weight in plan.keep_float or value is None:
        return None
    if len(value.shape) != 2 or g.types.get(weight) != TensorProto.FLOAT or ctx.producer(node.inputs[1]):
        return None  # (the ids a graph input: a table gathered at computed indices is left alone)
    n, k = (int(d) for d in value.shape)
    if k % plan.block_size:
        return None  # the packed rows would carry the last block's padding
    q_name, s_name = f"{weight}_Q{plan.bits}", f"{weight}_scales"
    if g.has_name(q_name):
        if plan.layouts.get(q_name) != "nk":
            return None
    else:
        add_parts(plan, g, weight, value, "nk", (q_name, s_name), plan.shapes(k, n))
        plan.layouts[q_name] = "nk"
    plan.gathered.add(weight)
    rows = g.make_initializer("", np.array([n, k * plan.bits // 8], dtype=np.int64))
    table = ctx.node("Reshape", [q_name, rows], 1)
    gathered = ctx.node("GatherBlockQuantized", [table.outputs[0], node.inputs[1], s_name], node.outputs,
                        domain=MS_DOMAIN, bits=plan.bits, block_size=plan.block_size, gather_axis=0,
                        quantize_axis=1)
    g.set_type(node.outputs[0], TensorProto.FLOAT)
    return [table, gathered]


class QuantizingWeights(SafetensorsWeights):
    """Safetensors weights whose quantized placeholders are computed as they are written.

    The file writer asks for the parts of a weight one after the other (in a prefetch
    thread): the weight is read and quantized for its first part, kept until its other
    part is asked for, then dropped.
    """

    def __init__(self, weights: Any, aliases: dict[str, str] | None, plan: QuantPlan, **kwargs):
        super().__init__(weights, aliases, **kwargs)
        self._plan = plan
        self._ready: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def payload(self, name: str, value) -> memoryview:
        entry = self._plan.pending.get(name)
        if entry is None:
            return super().payload(name, value)
        weight, like, layout, part = entry
        with self._lock:
            parts = self._ready.get(weight)
            if parts is None:
                packed, scales = self._plan.quantize(self.load(weight, like), layout)
                parts = self._ready[weight] = {"packed": packed, "scales": scales}
            array = parts.pop(part)
            if not parts:
                del self._ready[weight]
        return memoryview(array).cast("B")
