"""4-bit weights kept 4-bit: a constant int8/uint8 tensor whose quantization range fits in
four bits (torch and torchao hold int4 weights in int8 tensors with values in [-8, 7])
becomes an ONNX ``INT4``/``UINT4`` initializer, half a byte a value (the file is about 0.13x
of float32 instead of 0.25x). ``DequantizeLinear`` takes INT4/UINT4 from opset 21, where
onnxruntime (1.31.1, 1.32) runs it with ``block_size`` and fuses it, before a ``MatMul``,
into its 4-bit kernel (docs/quantization.md)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

#: (ONNX type, [low, high]) of the 4-bit type that holds values of an int8/uint8 range
_FOUR_BIT = {
    np.dtype(np.int8): (TensorProto.INT4, -8, 7),
    np.dtype(np.uint8): (TensorProto.UINT4, 0, 15),
}


def four_bit_type(g, weight: np.ndarray, zero_point: np.ndarray, quant_min, quant_max) -> int | None:
    """INT4 or UINT4 when the weight, its zero points and the declared range all fit that
    type and the target opset's DequantizeLinear takes it; None otherwise (kept 8-bit)."""
    found = _FOUR_BIT.get(weight.dtype)
    if found is None or g.main_opset < 21 or quant_min is None or quant_max is None:
        return None
    elem, low, high = found
    if not (low <= quant_min <= quant_max <= high):
        return None
    for values in (weight, zero_point):
        if values.size and (values.min() < low or values.max() > high):
            return None
    return elem


def as_four_bit(g, name: str, values: np.ndarray, elem: int) -> str:
    """A new initializer holding ``values`` as ``elem`` (INT4/UINT4), named after ``name``."""
    import ml_dtypes

    kind = ml_dtypes.int4 if elem == TensorProto.INT4 else ml_dtypes.uint4
    return g.make_initializer(g.unique_name(f"{name}_4bit"), values.astype(kind), dedup=False)


def _stored(g, name: str, values: np.ndarray, elem: int) -> str:
    if elem in (TensorProto.INT4, TensorProto.UINT4):
        return as_four_bit(g, name, values, elem)
    return g.make_initializer(g.unique_name(f"{name}_blocks"), np.ascontiguousarray(values), dedup=False)


def transposed_blocks(g, outputs, name: str, weight: np.ndarray, scale: np.ndarray, zero_point: np.ndarray,
                      block: int, elem: int) -> str:
    """A linear's weight ``(N, K)`` quantized in blocks of its rows, stored transposed
    ``(K, N)`` in 4 bits (``elem`` INT4/UINT4) or 8 (INT8/UINT8, the weight's own type) with
    ``DequantizeLinear(axis=0, block_size)`` and a ``Transpose`` back: onnxruntime folds the Transpose into the Gemm and fuses DequantizeLinear + Gemm
    (or MatMul) into MatMulNBits only in this layout (blocks along the reduced dimension,
    axis 0); the other runs DequantizeLinear at every call (1.3 ms against 0.056 ms for a
    1024x1024 weight at 1 thread, tests/bench/bench_quant.py --int4). A zero point of zeros
    is left out (DequantizeLinear's default)."""
    scales = g.make_initializer("", np.ascontiguousarray(scale.T), dedup=False)
    inputs = [_stored(g, name, weight.T, elem), scales]
    if np.any(zero_point):
        inputs.append(_stored(g, f"{name}_zero_point", zero_point.T, elem))
    dequantized = g.op.DequantizeLinear(*inputs, axis=0, block_size=block)
    return g.op.Transpose(dequantized, perm=[1, 0], outputs=outputs)


def per_row_transposed_blocks(g, outputs, name: str, weight: np.ndarray, scale: np.ndarray,
                              zero_point: np.ndarray, block: int, elem: int) -> str:
    """:func:`transposed_blocks` of a weight ``(N, K)`` quantized per row: each row's scale
    and zero point (one, or one a row) repeated over its blocks of ``block`` columns, the
    same products ``w * s`` as per row."""
    rows, columns = weight.shape
    blocks = -(-columns // block)
    scales = np.repeat(np.reshape(scale, (rows, 1)), blocks, axis=1)
    zeros = np.repeat(np.broadcast_to(zero_point, (rows,)).reshape(rows, 1), blocks, axis=1).astype(weight.dtype)
    return transposed_blocks(g, outputs, name, weight, scales, zeros, block, elem)
