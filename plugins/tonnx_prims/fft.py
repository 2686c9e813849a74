"""Fourier prims: ``fft_r2c``, ``fft_c2c``, ``fft_c2r``, ``conj`` and ``conj_physical``.

``torch._refs.fft`` (the decomposition of ``torch.fft.fft``, ``rfft``, ``irfft``, ``hfftn``
...) lowers to these: unnormalized transforms (the refs scale the result with separate
multiplications). Complex values are pair tensors [..., 2] (real, imaginary), the layout of
ONNX's ``DFT``. Every transform is a forward ``DFT`` (opset 17; its axis an input from
opset 20); an inverse is ``conj(DFT(conj(x)))``, unnormalized as the prim. The aten pack's
``fft.py`` converts ``aten::_fft_*`` the same way, with the DFT helpers of
``tonnx.converters``.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, conjugate, dft, named, numpy_dtype

#: complex ONNX type -> the type of its parts
PARTS = {TensorProto.COMPLEX64: TensorProto.FLOAT, TensorProto.COMPLEX128: TensorProto.DOUBLE}


def _i64(values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _part_type(elem: int, op: str) -> int:
    part = PARTS.get(elem, elem if elem in PARTS.values() else None)
    if part is None:
        raise UnsupportedError(
            f"{op}: ONNX type {elem} is not float32/float64/complex64/complex128; ONNX's "
            f"DFT takes float and double only. Cast the input to float32 first."
        )
    return part


def _axes(dim, rank: int, op: str) -> list[int]:
    axes = [d % max(rank, 1) for d in dim]
    if not axes or len(set(axes)) != len(axes):
        raise UnsupportedError(f"{op}: dim={list(dim)} is empty or repeats an axis.")
    return axes


# prims::fft_r2c.default
def prims_fft_r2c(g, sts, outputs, self, dim, onesided):
    "fft_r2c(Tensor self, *, int[] dim, bool onesided) -> Tensor"
    part = _part_type(sts.dtype, "prims::fft_r2c")
    axes = _axes(dim, len(sts.input_shapes[0]), "prims::fft_r2c")
    x = g.op.Unsqueeze(cast(g, self, part), _i64([-1]))  # a real signal: [..., 1]
    x = dft(g, x, axes[-1], onesided=bool(onesided))  # one-sided along the last dim only
    for axis in axes[:-1]:
        x = dft(g, x, axis)
    return named(g, x, outputs[0])


# prims::fft_c2c.default
def prims_fft_c2c(g, sts, outputs, self, dim, forward):
    "fft_c2c(Tensor self, *, int[] dim, bool forward) -> Tensor"
    axes = _axes(dim, len(sts.input_shapes[0]), "prims::fft_c2c")
    x = self if forward else conjugate(g, self)
    for axis in axes:
        x = dft(g, x, axis)
    return named(g, x if forward else conjugate(g, x), outputs[0])


# prims::fft_c2r.default
def prims_fft_c2r(g, sts, outputs, self, dim, last_dim_size):
    "fft_c2r(Tensor self, *, int[] dim, SymInt last_dim_size) -> Tensor"
    shape = sts.input_shapes[0]
    _part_type(sts.input_dtypes[0], "prims::fft_c2r")
    axes = _axes(dim, len(shape), "prims::fft_c2r")
    last, n = axes[-1], last_dim_size
    if type(n) is int and type(shape[last]) is int and shape[last] < n // 2 + 1:
        raise UnsupportedError(
            f"prims::fft_c2r: the input has {shape[last]} points along dim {last}, fewer "
            f"than last_dim_size // 2 + 1 = {n // 2 + 1}; torch.fft.irfft pads them first."
        )
    x = conjugate(g, self)
    for axis in axes[:-1]:
        x = dft(g, x, axis)
    # x is conj of the inverse over the other dims; along the last one the real inverse is
    # Re(DFT(conj(full spectrum))), X[k] = conj(X[n - k]) above n // 2, where the imaginary
    # parts of X[0] (and X[n/2]) drop out as in pocketfft's c2r
    x = dft(g, _conj_of_full_spectrum(g, x, last, n), last)
    return g.op.Gather(x, _i64(0), axis=-1, outputs=outputs)


def _conj_of_full_spectrum(g, conj_x: str, axis: int, n) -> str:
    """conj of the length-``n`` Hermitian spectrum along ``axis`` whose first
    ``n // 2 + 1`` points are conj(``conj_x``): conj_x there, then X[(n-1)//2], ..., X[1]."""
    one = _i64([1])
    if type(n) is int:
        half, kept = _i64([(n - 1) // 2]), _i64([n // 2 + 1])
    else:
        n = g.op.Reshape(n, one)
        half = g.op.Div(g.op.Sub(n, one), _i64([2]))
        kept = g.op.Add(g.op.Div(n, _i64([2])), one)
    axes = _i64([axis])
    low = g.op.Slice(conj_x, _i64([0]), kept, axes)
    high = conjugate(g, g.op.Slice(conj_x, half, _i64([0]), axes, _i64([-1])))
    return g.op.Concat(low, high, axis=axis)


# prims::conj_physical.default
def prims_conj_physical(g, sts, outputs, self):
    "conj_physical(Tensor self) -> Tensor"
    return g.op.Mul(self, np.array([1, -1], dtype=numpy_dtype(g.get_type(self))), outputs=outputs)


# prims::conj.default
def prims_conj(g, sts, outputs, a):
    "conj(Tensor(a) a) -> Tensor(a)"
    return prims_conj_physical(g, sts, outputs, a)


CONVERTERS = (
    Converter("prims::fft_r2c.default", prims_fft_r2c, complex=True),
    Converter("prims::fft_c2c.default", prims_fft_c2c, complex=True),
    Converter("prims::fft_c2r.default", prims_fft_c2r, complex=True),
    Converter("prims::conj_physical.default", prims_conj_physical, complex=True),
    Converter("prims::conj.default", prims_conj, complex=True),
)
