"""Integer weights kept integer: torchao's int8 weight-only linears compute
``x @ w.to(float32) * scale`` in aten ops; the cast of the constant int8 weight would be
folded into a float32 weight (the file then as large as the float model, as torch.onnx
exports it). Here the cast of an 8-bit matrix is a ``DequantizeLinear`` of scale 1.0: the
same float32 values (an integer times 1.0 is exact), a constant weight an int8 initializer
(0.25x of its float32 bytes).

Which ``DequantizeLinear`` decides the run time. A matrix read only as the right operand of
a matmul gets, from opset 21, scales of 1.0 in blocks of :data:`BLOCK` rows
(``axis=0, block_size``): onnxruntime 1.31.1 and 1.32 fuse that with the MatMul into
``MatMulNBits(bits=8)`` (0.35 ms for two 1024x1024 layers at one thread, against 0.75 ms
for torch.onnx's ``Cast``, which onnxruntime folds into a float32 weight, and 1.5 ms for a
``DequantizeLinear`` run at every call). Its default accuracy level quantizes the
activations to int8 (docs/quantization.md gives the error and the session options). Other
reads, and opsets before 21, keep one scalar scale. ``aten::_int_mm`` (int8 x int8 in int32,
torchao's dynamic schemes) is ``MatMulInteger``: an aten op, converted with or without
torchao."""

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


#: rows a block of scales covers: MatMulNBits's block size, onnxruntime's own default when it
#: expands a per-tensor scale (``session.qdq_matmulnbits_block_size``); the scales of 1.0 add
#: 4 / BLOCK bytes a weight to the file (12.5% of the int8 bytes)
BLOCK = 32

#: the FX targets whose second operand a blocked DequantizeLinear may feed
_MATMULS = frozenset({"aten.mm.default", "aten.matmul.default"})


def _integer_matrix_into_matmul(node) -> bool:
    """The cast of an int8/uint8 matrix (rank 2) whose every reader is a matmul taking it
    as its right operand only: the layout onnxruntime fuses into MatMulNBits."""
    if not _integer_matrix_to_float32(node) or node.args[0].meta["val"].dim() != 2 or not node.users:
        return False
    return all(str(user.target) in _MATMULS and len(user.args) == 2 and user.args[1] is node
               and user.args[0] is not node for user in node.users)


def _dequantized(g, self, outputs):
    """``DequantizeLinear(self, 1.0)``, also for a weight not yet folded to a constant (the
    transpose of a weight of over 65536 values is folded only when the graph is finished):
    exact for a run-time tensor too."""
    zero = np.zeros((), dtype=np.int8 if g.get_type(self) == TensorProto.INT8 else np.uint8)
    return g.op.DequantizeLinear(self, np.array(1.0, dtype=np.float32), zero, outputs=outputs)


def _blocked_for_matmul(g, self, outputs):
    """``DequantizeLinear(self, ones, axis=0, block_size=BLOCK)`` on a ``(K, N)`` matrix
    feeding a MatMul (from opset 21; before, the scalar form). The scales are this weight's
    own initializer: onnxruntime does not fuse a DequantizeLinear whose scale another node
    reads too."""
    shape = g.get_shape(self)
    if g.main_opset < 21 or len(shape) != 2 or not all(type(d) is int for d in shape):
        return _dequantized(g, self, outputs)
    rows, columns = shape
    ones = g.make_initializer("", np.ones((-(-rows // BLOCK), columns), dtype=np.float32), dedup=False)
    return g.op.DequantizeLinear(self, ones, axis=0, block_size=BLOCK, outputs=outputs)


# aten::_to_copy.default
def aten__to_copy_into_matmul(g, sts, outputs, self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):  # noqa: E501
    "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor"  # noqa: E501
    return _blocked_for_matmul(g, self, outputs)


# aten::to.dtype
def aten_to_dtype_into_matmul(g, sts, outputs, self, dtype, non_blocking=False, copy=False, memory_format=None):
    "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)"  # noqa: E501
    return _blocked_for_matmul(g, self, outputs)


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


#: above the aten pack's cast (priority 100), only where the predicate holds; the matmul's
#: operand above the other casts of integer matrices
_PRIORITY = 110
_MATMUL_PRIORITY = 120

CONVERTERS = (
    Converter("aten::_to_copy.default", aten__to_copy_into_matmul, applies=_integer_matrix_into_matmul,
              priority=_MATMUL_PRIORITY),
    Converter("aten::to.dtype", aten_to_dtype_into_matmul, applies=_integer_matrix_into_matmul,
              priority=_MATMUL_PRIORITY),
    Converter("aten::_to_copy.default", aten__to_copy, applies=_integer_matrix_to_float32, priority=_PRIORITY),
    Converter("aten::to.dtype", aten_to_dtype, applies=_integer_matrix_to_float32, priority=_PRIORITY),
    Converter("aten::_int_mm.default", aten__int_mm),
)
