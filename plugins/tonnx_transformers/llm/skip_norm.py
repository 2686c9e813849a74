"""The residual Add and the RMSNorm reading it as one ``SkipSimplifiedLayerNormalization``.

A transformers decoder layer adds its output to the residual stream, and the next norm
reads the sum: ``w * (x / sqrt(mean(x ** 2) + eps))`` with ``x = a + b``. onnxruntime fuses
the norm alone (``SimplifiedLayerNormalization``) and keeps the Add: two nodes where
onnxruntime-genai's builder has one, twice a layer. At decode a step's kernels are tiny and
each node costs the executor's overhead: measured on the 4-layer benchmark Llama (int4, one
thread, past 128) the step ran 2.79 ms against the builder's 2.58 ms with kernels taking
less time than the builder's (3.02 vs 3.10 ms/run profiled); the difference is the 29 more
nodes. ``SkipSimplifiedLayerNormalization(a, b, w)`` returns the norm and the sum (its
fourth output), which the next residual reads.

Fires in float32 only (a float16 chain rounds each step where the kernel does not), on a
norm over the last axis with a scale of that size, when ``a`` and ``b`` have the same shape.
"""

from __future__ import annotations

from typing import Any

from onnx import TensorProto

from ._rules import MS_DOMAIN, only_read_by_pattern, producer, rules_pack, same_dimension


def skip_norm_pack() -> Any:
    """A pack (for ``Dispatcher(extra_packs=[...])``) with the stage-1 rule."""
    from tonnx.converters import RewriteRule

    rule = RewriteRule("skip_simplified_layer_norm", "Mul", skip_norm, stage=1)
    return rules_pack("llm_skip_norm", "export-llm: residual Add + RMSNorm -> SkipSimplifiedLayerNormalization",
                      [rule])


def skip_norm(ctx, node):
    """``Mul(w, x / sqrt(mean(x ** 2, -1) + eps))``, ``x = Add(a, b)`` -> the fused op."""
    # the aten pack's RMSNorm matcher (a public module of the pack shipped with tonnx)
    from tonnx_aten.rewrites.rms_norm import normalized

    g = ctx.g
    for normed, scale in (node.inputs, node.inputs[::-1]):
        found = normalized(ctx, normed)
        if found is None or not only_read_by_pattern(ctx, normed):
            continue
        x, axes, eps = found
        add = producer(ctx, x, "Add")
        if add is None or len(add.inputs) != 2:
            return None
        a, b = add.inputs
        names = (a, b, scale, x, node.outputs[0])
        if not all(g.has_type(n) and g.get_type(n) == TensorProto.FLOAT for n in names):
            return None
        shape_a, shape_b, shape_w = g.get_shape(a), g.get_shape(b), g.get_shape(scale)
        if shape_a is None or shape_b is None or len(shape_a) != len(shape_b) or \
                not all(same_dimension(p, q) for p, q in zip(shape_a, shape_b)):
            return None
        if axes is None or [axis % len(shape_a) for axis in axes] != [len(shape_a) - 1]:
            return None
        if shape_w is None or len(shape_w) != 1 or shape_w[0] != shape_a[-1] or type(shape_w[0]) is not int:
            return None
        fused = ctx.node("SkipSimplifiedLayerNormalization", [a, b, scale], [node.outputs[0], "", "", x],
                         domain=MS_DOMAIN, epsilon=float(eps))
        if not ctx.take_over(add, replacement=[fused]):
            return None
        return [fused]
    return None

