"""The DFT of complex pair tensors, which the aten and prims packs both emit.

Published through ``tonnx.converters``: packs never import each other. Complex values are
pair tensors [..., 2] (real, imaginary), the layout ONNX's ``DFT`` takes and returns."""

from __future__ import annotations

import numpy as np

from tonnx.builder._dtypes import numpy_dtype


def dft(g, x: str, axis: int, onesided: bool = False) -> str:
    """Forward DFT of the pair tensor ``x`` ([..., 1] real or [..., 2]) along ``axis``: the
    axis an attribute below opset 20, an input from 20."""
    if g.main_opset >= 20:
        return g.op.DFT(x, None, np.array(axis, dtype=np.int64), onesided=int(onesided))
    return g.op.DFT(x, axis=axis, onesided=int(onesided))


def conjugate(g, x: str) -> str:
    """The conjugate of a pair tensor: the imaginary part negated (exact)."""
    return g.op.Mul(x, np.array([1, -1], dtype=numpy_dtype(g.get_type(x))))
