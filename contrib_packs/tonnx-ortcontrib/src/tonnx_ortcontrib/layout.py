"""Layout rewrites: the Transpose/Reshape pairs the fused ops' (B, S, N*H) layout cancels.

HF attention reshapes each projection to (B, S, N, H) and transposes it to (B, N, S, H);
the fused ops want (B, S, N*H) again, so the converter transposes back and reshapes: both
pairs cancel, once the Reshape to its own shape HF leaves between two of them is gone. The
aten pack's peepholes run before the packs' rewrites, so these run again here, on what the
other rules create.
"""

from __future__ import annotations

from tonnx.converters import RewriteRule

from ._patterns import constant, producer_of, same, shape


def transpose_transpose(ctx, node):
    """``Transpose(Transpose(x, p), q)`` -> ``Transpose(x, p[q])`` or ``Identity(x)``."""
    inner = producer_of(ctx, node.inputs[0], "Transpose")
    if inner is None or "perm" not in inner.attributes or "perm" not in node.attributes:
        return None
    first, second = list(inner.attributes["perm"]), list(node.attributes["perm"])
    perm = [first[axis] for axis in second]
    if perm == sorted(perm):
        return [ctx.node("Identity", [inner.inputs[0]], node.outputs)]
    return [ctx.node("Transpose", [inner.inputs[0]], node.outputs, perm=perm)]


def reshape_reshape(ctx, node):
    """``Reshape(Reshape(x, a), b)`` -> ``Reshape(x, b)``, ``Identity(x)`` when that is x's shape.

    A 0 in ``b`` copies a dimension of the inner result: allowed only where it is the same
    dimension of ``x``.
    """
    inner = producer_of(ctx, node.inputs[0], "Reshape")
    target = constant(ctx, node.inputs[1])
    if inner is None or target is None or node.attributes.get("allowzero") or inner.attributes.get("allowzero"):
        return None
    x = inner.inputs[0]
    x_shape, mid_shape = shape(ctx, x), shape(ctx, inner.outputs[0])
    dims = []
    for i, v in enumerate(int(d) for d in target):
        if v == 0:
            if x_shape is None or mid_shape is None or i >= min(len(x_shape), len(mid_shape)):
                return None
            if not same(x_shape[i], mid_shape[i]):
                return None
            dims.append(x_shape[i])
        else:
            dims.append(v)
    if x_shape is not None and len(dims) == len(x_shape):
        known = [same(d, s) for d, s in zip(dims, x_shape)]
        if all(known) or (dims.count(-1) == 1 and sum(known) == len(dims) - 1):
            return [ctx.node("Identity", [x], node.outputs)]
    return [ctx.node("Reshape", [x, node.inputs[1]], node.outputs)]


def reshape_noop(ctx, node):
    """``Reshape(x, target)`` -> ``Identity(x)`` when ``target`` gives x's own shape (HF's
    view of the attention output as (B, N, L, H), which stands between two Transposes)."""
    x_shape, target = shape(ctx, node.inputs[0]), constant(ctx, node.inputs[1])
    if x_shape is None or target is None or target.ndim != 1 or len(target) != len(x_shape):
        return None
    zero_copies = not node.attributes.get("allowzero")
    known = [(v == 0 and zero_copies) or (type(d) is int and v == d) for v, d in zip((int(t) for t in target), x_shape)]
    if all(known) or (list(target).count(-1) == 1 and sum(known) == len(known) - 1):
        return [ctx.node("Identity", [node.inputs[0]], node.outputs)]
    return None


REWRITES = (
    RewriteRule("transpose_transpose", "Transpose", transpose_transpose),
    RewriteRule("reshape_reshape", "Reshape", reshape_reshape),
    RewriteRule("reshape_noop", "Reshape", reshape_noop),
)
