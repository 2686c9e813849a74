"""RMSNorm as ``SimplifiedLayerNormalization``; with the residual Add before it,
``SkipSimplifiedLayerNormalization`` (one kernel instead of two, the sum is its 4th output).

- ``aten::rms_norm`` (``torch.nn.RMSNorm``, ``F.rms_norm``) is converted directly;
- HF's hand-written RMSNorm (``x * rsqrt(mean(x**2, -1) + eps) * w``) reaches the graph as
  ``Mul(w, Div(x, Sqrt(Add(ReduceMean(Pow(x, 2)), eps))))`` after the aten pack and the
  builder's peepholes: a rewrite rule matches it.

Float32 only: onnxruntime's kernels compute in float32, as torch does for float32.
``SimplifiedLayerNormalization`` is registered by onnxruntime in the ONNX domain (as
onnxruntime-genai's builder writes it); the skip variant is in ``com.microsoft``.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter
from tonnx.converters import RewriteRule

from . import MS_DOMAIN
from ._patterns import last_axis, producer_of, same, scalar, shape


def _rms_norm_fits(node) -> bool:
    import torch

    x = node.args[0].meta.get("val")
    weight = node.args[2] if len(node.args) > 2 else node.kwargs.get("weight")
    normalized = node.args[1]
    if x is None or x.dtype != torch.float32 or len(normalized) != 1 or type(normalized[0]) is not int:
        return False
    if weight is not None and getattr(weight, "meta", {}).get("val") is None:
        return False
    return True


# aten::rms_norm.default
def aten_rms_norm(g, sts, outputs, input, normalized_shape, weight=None, eps=None):
    "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor"
    (d,) = normalized_shape
    if weight is None:
        weight = g.make_initializer("", np.ones((d,), dtype=np.float32))
    epsilon = float(np.finfo(np.float32).eps) if eps is None else float(eps)
    return g.make_node(
        "SimplifiedLayerNormalization", [input, weight], outputs, axis=-1, epsilon=epsilon, stash_type=1
    )


def _rms_pattern(ctx, div):
    """(x, eps) when ``div`` is ``Div(x, Sqrt(Add(ReduceMean(Pow(x, 2), [-1]), eps)))``."""
    x, root = div.inputs
    sqrt = producer_of(ctx, root, "Sqrt")
    add = sqrt and producer_of(ctx, sqrt.inputs[0], "Add")
    if add is None:
        return None
    for mean_name, eps_name in (add.inputs, add.inputs[::-1]):
        eps = scalar(ctx, eps_name)
        mean = producer_of(ctx, mean_name, "ReduceMean")
        if eps is None or mean is None or mean.attributes.get("keepdims", 1) != 1 or len(mean.inputs) != 2:
            continue
        pow_ = producer_of(ctx, mean.inputs[0], "Pow")
        x_shape = shape(ctx, x)
        if pow_ is None or pow_.inputs[0] != x or scalar(ctx, pow_.inputs[1]) != 2.0 or not x_shape:
            continue
        if last_axis(ctx, mean.inputs[1], len(x_shape)):
            return x, eps
    return None


def rms_norm(ctx, node):
    """``w * (x / sqrt(mean(x**2, -1) + eps))`` -> ``SimplifiedLayerNormalization``."""
    for div_name, w in (node.inputs, node.inputs[::-1]):
        div = producer_of(ctx, div_name, "Div")
        found = div and _rms_pattern(ctx, div)
        if not found:
            continue
        x, eps = found
        x_shape, w_shape = shape(ctx, x), shape(ctx, w)
        if ctx.g.get_type(x) != TensorProto.FLOAT or ctx.g.get_type(w) != TensorProto.FLOAT:
            return None
        if w_shape is None or len(w_shape) != 1 or not same(w_shape[0], x_shape[-1]):
            return None
        return [
            ctx.node(
                "SimplifiedLayerNormalization", [x, w], node.outputs, axis=-1, epsilon=eps, stash_type=1
            )
        ]
    return None


def skip_rms_norm(ctx, node):
    """``SimplifiedLayerNormalization(a + b)`` -> ``SkipSimplifiedLayerNormalization(a, b)``;
    the sum, when something else reads it, is the fused op's 4th output."""
    if len(node.inputs) != 2 or node.attributes.get("axis", -1) not in (-1, 2):
        return None
    add = producer_of(ctx, node.inputs[0], "Add")
    if add is None:
        return None
    a, b = add.inputs
    sa, sb, sx = shape(ctx, a), shape(ctx, b), shape(ctx, node.inputs[0])
    if sa is None or sb is None or sx is None or len(sa) != 3 or len(sb) != 3:
        return None
    if not all(same(x, y) for x, y in zip(sa, sb)) or ctx.g.get_type(a) != TensorProto.FLOAT:
        return None
    total = add.outputs[0]
    keeps_sum = ctx.readers(total) > 1
    if keeps_sum and not ctx.take_over(add):
        return None
    out = ctx.node(
        "SkipSimplifiedLayerNormalization",
        [a, b, node.inputs[1]],
        [node.outputs[0], "", "", total if keeps_sum else ""],
        domain=MS_DOMAIN,
        epsilon=node.attributes.get("epsilon", 1e-5),
    )
    return [out]


CONVERTERS = (Converter("aten::rms_norm.default", aten_rms_norm, applies=_rms_norm_fits),)

REWRITES = (
    RewriteRule("rms_norm", "Mul", rms_norm),
    RewriteRule("skip_rms_norm", "SimplifiedLayerNormalization", skip_rms_norm),
)
