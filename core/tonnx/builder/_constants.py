"""Constant values: numpy arrays or torch tensors, viewed as numpy without copies."""

from __future__ import annotations

from typing import Any

import numpy as np

from tonnx.builder._dtypes import onnx_type_from_numpy, onnx_type_from_torch

#: Values with at most this many elements are deduplicated by content.
DEDUP_MAX_ELEMENTS = 64


def is_torch_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch")


def normalize(value: Any):
    """A numpy array or a torch tensor for any constant a converter gives."""
    if isinstance(value, np.ndarray) or is_torch_tensor(value):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, bool):
        return np.array(value, dtype=np.bool_)
    if isinstance(value, int):
        return np.array(value, dtype=np.int64)
    if isinstance(value, float):
        return np.array(value, dtype=np.float32)
    if isinstance(value, (list, tuple)):
        return np.asarray(value, dtype=np.int64 if _all_ints(value) else np.float32)
    raise TypeError(f"Cannot make a constant from {type(value).__name__}: {value!r}")


def _all_ints(values) -> bool:
    return all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)


def elem_type(value) -> int:
    if isinstance(value, np.ndarray):
        return onnx_type_from_numpy(value.dtype)
    return onnx_type_from_torch(value.dtype)


def has_data(value) -> bool:
    """False for a tensor on the ``meta`` device (a model too big for memory, whose weights
    are read from files only when the model is written)."""
    return isinstance(value, np.ndarray) or not value.is_meta


def as_numpy(value) -> np.ndarray:
    """A numpy view of a constant (bfloat16 through ml_dtypes); no copy for CPU tensors."""
    if isinstance(value, np.ndarray):
        return value
    import torch

    value = value.detach()
    if value.dtype == torch.bfloat16:
        import ml_dtypes

        return value.view(torch.int16).numpy(force=True).view(ml_dtypes.bfloat16)
    return value.numpy(force=True)


def dedup_key(value) -> tuple | None:
    """Content key of a small value, None for a large one (never compared)."""
    if not isinstance(value, np.ndarray) or value.size > DEDUP_MAX_ELEMENTS:
        return None
    # dtype.name too: int4, uint4 and the float8 types share the str '<V1'
    return (value.dtype.str, value.dtype.name, value.shape, value.tobytes())


def auto_name(value) -> str:
    """A readable name for an anonymous constant: ``init7_s2x3`` (type 7, shape 2x3)."""
    shape = "x".join(str(d) for d in value.shape) or "scalar"
    return f"init{elem_type(value)}_s{shape}"
