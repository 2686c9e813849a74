"""Element types: ONNX integers, numpy dtypes and torch dtypes, mapped once."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

#: Types whose results are always of the type of their first input.
FLOAT_TYPES = frozenset(
    {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}
)
INT_TYPES = frozenset(
    {
        TensorProto.INT8,
        TensorProto.INT16,
        TensorProto.INT32,
        TensorProto.INT64,
        TensorProto.UINT8,
        TensorProto.UINT16,
        TensorProto.UINT32,
        TensorProto.UINT64,
    }
)

_NP_TO_ONNX: dict[np.dtype, int] = {}


def onnx_type_from_numpy(dtype: np.dtype) -> int:
    """ONNX element type of a numpy dtype (ml_dtypes' bfloat16 included)."""
    found = _NP_TO_ONNX.get(dtype)
    if found is None:
        found = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        _NP_TO_ONNX[dtype] = found
    return found


def numpy_dtype(elem_type: int) -> np.dtype:
    """Numpy dtype of an ONNX element type."""
    return helper.tensor_dtype_to_np_dtype(elem_type)


def onnx_type_from_torch(dtype) -> int:
    """ONNX element type of a torch dtype."""
    return _torch_to_onnx()[dtype]


def torch_dtype(elem_type: int):
    """Torch dtype of an ONNX element type."""
    return _onnx_to_torch()[elem_type]


def _torch_to_onnx() -> dict:
    table = _TABLES.get("torch")
    if table is None:
        import torch

        table = {
            torch.float32: TensorProto.FLOAT,
            torch.float16: TensorProto.FLOAT16,
            torch.bfloat16: TensorProto.BFLOAT16,
            torch.float64: TensorProto.DOUBLE,
            torch.int8: TensorProto.INT8,
            torch.int16: TensorProto.INT16,
            torch.int32: TensorProto.INT32,
            torch.int64: TensorProto.INT64,
            torch.uint8: TensorProto.UINT8,
            torch.uint16: TensorProto.UINT16,
            torch.uint32: TensorProto.UINT32,
            torch.uint64: TensorProto.UINT64,
            torch.bool: TensorProto.BOOL,
            torch.complex64: TensorProto.COMPLEX64,
            torch.complex128: TensorProto.COMPLEX128,
            torch.float8_e4m3fn: TensorProto.FLOAT8E4M3FN,
            torch.float8_e4m3fnuz: TensorProto.FLOAT8E4M3FNUZ,
            torch.float8_e5m2: TensorProto.FLOAT8E5M2,
            torch.float8_e5m2fnuz: TensorProto.FLOAT8E5M2FNUZ,
        }
        _TABLES["torch"] = table
        _TABLES["onnx"] = {v: k for k, v in table.items()}
    return table


def _onnx_to_torch() -> dict:
    _torch_to_onnx()
    return _TABLES["onnx"]


# Filled on first use so that importing tonnx does not import torch.
_TABLES: dict[str, dict] = {}
