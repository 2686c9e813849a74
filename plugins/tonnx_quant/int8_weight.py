"""Integer weights kept integer: torchao's int8 weight-only linears compute
``x @ w.to(float32) * scale`` in aten ops; the cast of the constant int8 weight would be
folded into a float32 weight (the file then as large as the float model, as torch.onnx
exports it). Here the cast of an 8-bit matrix is ``DequantizeLinear(w, 1.0)``: the same
float32 values (an integer times 1.0 is exact), a constant weight an int8 initializer
(0.25x of its float32 bytes), which onnxruntime dequantizes at run time. ``aten::_int_mm``
(int8 x int8 in int32, torchao's dynamic schemes) is ``MatMulInteger``: an aten op, converted
with or without torchao."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx.converters import Converter


def _integer_matrix_to_float32(node) -> bool:
    """The FX node casts an int8/uint8 tensor of rank >= 2 to float32."""
    import torch

    source = node.args[0].meta.get("val") if node.args and hasattr(node.args[0], "meta") else None
    result = node.meta.get("val")
    return (source is not None and result is not None and source.dtype in (torch.int8, torch.uint8)
            and source.dim() >= 2 and result.dtype == torch.float32)


def _dequantized(g, self, outputs):
    """``DequantizeLinear(self, 1.0)``, also for a weight not yet folded to a constant (the
    transpose of a weight of over 65536 values is folded only when the graph is finished):
    exact for a run-time tensor too."""
    zero = np.zeros((), dtype=np.int8 if g.get_type(self) == TensorProto.INT8 else np.uint8)
    return g.op.DequantizeLinear(self, np.array(1.0, dtype=np.float32), zero, outputs=outputs)


# aten::_to_copy.default
def aten__to_copy(g, sts, outputs, self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):  # noqa: E501
    "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor"  # noqa: E501
    return _dequantized(g, self, outputs)


# aten::to.dtype
def aten_to_dtype(g, sts, outputs, self, dtype, non_blocking=False, copy=False, memory_format=None):
    "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"  # noqa: E501
    return _dequantized(g, self, outputs)


# aten::_int_mm.default
def aten__int_mm(g, sts, outputs, self, mat2):
    "_int_mm(Tensor self, Tensor mat2) -> Tensor"
    # int8 x int8 accumulated in int32, exactly as torch (no zero points)
    return g.op.MatMulInteger(self, mat2, outputs=outputs)


#: above the aten pack's cast (priority 100), only where the predicate holds
_PRIORITY = 110

CONVERTERS = (
    Converter("aten::_to_copy.default", aten__to_copy, applies=_integer_matrix_to_float32, priority=_PRIORITY),
    Converter("aten::to.dtype", aten_to_dtype, applies=_integer_matrix_to_float32, priority=_PRIORITY),
    Converter("aten::_int_mm.default", aten__int_mm),
)
