"""``MatMulInteger`` of int8 by a constant int8 weight (``aten::_int_mm``: torchao's dynamic
int8 schemes) runs as uint8 x uint8 with zero points 128: the same integers, 30-40 times
faster in onnxruntime.

onnxruntime 1.31.1 and 1.32 run int8 x int8 ``MatMulInteger`` through a slow path without
VNNI (a 1x1024 by 1024x1024 product: 5.9-6.0 ms at one thread, tests/bench/bench_quant.py
--schemes), uint8 x uint8 through MLAS's packed kernel (0.14-0.17 ms). ``a - 128 + 128``
and ``b - 128 + 128`` change nothing in the integer sums: ``a + 128`` is computed in int16
and cast to uint8 at run time, the weight is stored ``b + 128`` in uint8, and both zero
points are 128. uint8 x int8 would avoid the weight copy but saturates 16-bit pair sums on
AVX2 (docs/quantization.md): not exact, not used.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx.converters import RewriteRule


def unsigned_int_matmul(ctx, node) -> list | None:
    """``MatMulInteger(a, w)``, int8 ``a`` and a constant int8 ``w`` without zero points,
    becomes ``MatMulInteger(uint8(a + 128), uint8(w + 128), 128, 128)``; None otherwise."""
    g = ctx.g
    if len(node.inputs) != 2 or g.get_type(node.inputs[0]) != TensorProto.INT8:
        return None
    # the graph is optimized: a transposed constant weight is folded (a weight read as a
    # ``meta`` placeholder has no values here and keeps the int8 form)
    if not g.is_constant(node.inputs[1]) or g.get_type(node.inputs[1]) != TensorProto.INT8:
        return None
    weight = g.get_constant(node.inputs[1])
    shifted_weight = (weight.astype(np.int16) + 128).astype(np.uint8)
    b = g.make_initializer(g.unique_name(f"{node.inputs[1]}_uint8"), shifted_weight, dedup=False)
    zero_point = g.make_initializer("", np.array(128, dtype=np.uint8))
    wide = ctx.node("Cast", [node.inputs[0]], to=TensorProto.INT16)
    shifted = ctx.node("Add", [wide.outputs[0], g.make_initializer("", np.array(128, dtype=np.int16))])
    a = ctx.node("Cast", [shifted.outputs[0]], to=TensorProto.UINT8)
    product = ctx.node("MatMulInteger", [a.outputs[0], b, zero_point, zero_point], node.outputs)
    return [wide, shifted, a, product]


REWRITES = (RewriteRule("unsigned_int_matmul", "MatMulInteger", unsigned_int_matmul),)
