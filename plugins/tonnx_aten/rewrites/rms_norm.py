"""RMSNorm written out (HF's ``w * (x * rsqrt(mean(x**2) + eps))``) -> ``RMSNormalization``.

After conversion and the builder's peepholes the norm reads
``Mul(w, Div(x, Sqrt(Add(ReduceMean(Pow(x, 2)), eps))))``: exactly the function ONNX
defines the op by (opset 23), so the rule fires only on that chain, in float32 (the op's
``stash_type=1`` computes in float32; a float16 chain rounds each step in float16), over
trailing axes, with a scale of the normalized shape. Gemma's ``x * (1 + w)`` is the same
chain with the scale ``Add(1, w)``. Anything else keeps its primitive ops.
"""

from __future__ import annotations

from ._patterns import applies, ints, only_read_by_pattern, producer, same, scalar, shape


def normalized(ctx, name: str):
    """(x, axes, eps) when ``name`` is ``x / sqrt(mean(x * x, axes) + eps)``, else None."""
    div = producer(ctx, name, "Div")
    sqrt = div and producer(ctx, div.inputs[1], "Sqrt")
    add = sqrt and producer(ctx, sqrt.inputs[0], "Add")
    if add is None:
        return None
    for mean_name, eps_name in (add.inputs, add.inputs[::-1]):
        mean, eps = producer(ctx, mean_name, "ReduceMean"), scalar(ctx, eps_name)
        if mean is not None and eps is not None and shape(ctx, eps_name) in ((), (1,)):
            break
    else:
        return None
    if mean.attributes.get("keepdims", 1) != 1 or len(mean.inputs) < 2:
        return None
    square, x = _square(ctx, mean.inputs[0]), div.inputs[0]
    if square is None or square.inputs[0] != x:
        return None
    chain = (square.outputs[0], mean.outputs[0], add.outputs[0], sqrt.outputs[0])
    if not only_read_by_pattern(ctx, *chain):
        return None
    return x, ints(ctx, mean.inputs[1]), eps


def _square(ctx, name: str):
    """The ``Pow(x, 2)`` or ``Mul(x, x)`` node computing ``name``."""
    node = producer(ctx, name, "Pow")
    if node is not None:
        return node if scalar(ctx, node.inputs[1]) == 2.0 else None
    node = producer(ctx, name, "Mul")
    return node if node is not None and node.inputs[0] == node.inputs[1] else None


def _trailing(axes, rank: int) -> int:
    """k when ``axes`` are exactly the last k axes of a rank-``rank`` tensor, else 0."""
    if not axes:
        return 0
    wanted = sorted(a % rank for a in axes)
    k = len(wanted)
    return k if wanted == list(range(rank - k, rank)) and len(set(wanted)) == k else 0


def rms_normalization(ctx, node):
    """``Mul(scale, x / sqrt(mean(x**2) + eps))`` -> ``RMSNormalization(x, scale)``."""
    for normed, scale in (node.inputs, node.inputs[::-1]):
        found = normalized(ctx, normed)
        if found is None or not only_read_by_pattern(ctx, normed):
            continue
        x, axes, eps = found
        if not applies(ctx, x, scale, node.outputs[0]):
            return None
        x_shape, scale_shape = shape(ctx, x), shape(ctx, scale)
        k = _trailing(axes, len(x_shape)) if x_shape and axes is not None else 0
        if not k or scale_shape is None or len(scale_shape) != k:
            return None
        if not all(same(a, b) for a, b in zip(scale_shape, x_shape[-k:])):
            return None
        attributes = {"axis": -k, "epsilon": eps, "stash_type": 1}
        return [ctx.node("RMSNormalization", [x, scale], node.outputs, **attributes)]
    return None
