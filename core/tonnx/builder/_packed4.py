"""4-bit constants (ONNX ``INT4``/``UINT4``): held one value a byte in memory, as ml_dtypes'
``int4``/``uint4`` arrays, and written two a byte (the first in the low nibble), as ONNX
stores them. A pack makes one with ``g.make_initializer(name, array.astype(ml_dtypes.int4))``;
the writer packs it when the model is serialized, so the file holds half a byte a value."""

from __future__ import annotations

import numpy as np

_FOUR_BIT = ("int4", "uint4")


def is_four_bit(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.name in _FOUR_BIT


def packed_nbytes(value: np.ndarray) -> int:
    return (value.size + 1) // 2


def packed(value: np.ndarray) -> np.ndarray:
    """The values two a byte (a uint8 array of ``packed_nbytes``), an odd count padded
    with a zero nibble."""
    nibbles = np.ascontiguousarray(value).reshape(-1).view(np.uint8) & 0x0F
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    return nibbles[0::2] | (nibbles[1::2] << 4)
