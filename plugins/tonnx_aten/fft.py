"""Discrete Fourier transforms: ``_fft_r2c``, ``_fft_c2c``, ``_fft_c2r`` and ``stft``.

``torch.fft.*`` (fft, rfft, irfft, hfft, fftn, ...) reach these through torch's
decompositions. Complex values are pair tensors [..., 2] (see ``complex.py``), the layout
ONNX's ``DFT`` and ``STFT`` take and return. Every transform here is a forward ``DFT``
(opset 17; from opset 20 its axis is an input): an inverse is ``conj(DFT(conj(x)))``, which
is unnormalized as torch's kernels are, and torch's normalization (``normalization``: 0 none,
1 by 1/sqrt(n), 2 by 1/n, n the product of the transformed sizes) is one multiplication by
the factor pocketfft computes, ``1 / T(n)`` or ``1 / sqrt(T(n))`` in the element type.
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


def _signal_size(g, x: str, shape: tuple, dims: list[int]):
    """The number of points transformed: an int, or a 0-d int64 tensor for dynamic sizes."""
    sizes = [shape[d] for d in dims]
    if all(type(s) is int for s in sizes):
        return int(np.prod(sizes, dtype=np.int64))
    parts = [g.op.Shape(x, start=d, end=d + 1) for d in dims]
    return g.op.ReduceProd(parts[0] if len(parts) == 1 else g.op.Concat(*parts, axis=0), keepdims=0)


def _normalize(g, x: str, normalization: int, size, part: int) -> str:
    """``x`` times pocketfft's factor for ``normalization`` (0: none, 1: 1/sqrt(n), 2: 1/n)."""
    if normalization == 0:
        return x
    if normalization not in (1, 2):
        raise UnsupportedError(f"fft normalization={normalization}: torch knows 0, 1 and 2 only.")
    dtype = numpy_dtype(part)
    if type(size) is int:
        n = dtype.type(size)
        one = dtype.type(1)
        return g.op.Mul(x, np.array(one / (np.sqrt(n) if normalization == 1 else n), dtype=dtype))
    n = g.op.Cast(size, to=part)
    return g.op.Mul(x, g.op.Reciprocal(g.op.Sqrt(n) if normalization == 1 else n))


def _axes(dim, rank: int, op: str) -> list[int]:
    axes = [d % max(rank, 1) for d in dim]
    if len(set(axes)) != len(axes):
        raise UnsupportedError(f"{op}: dim={list(dim)} repeats an axis; torch refuses it too.")
    return axes


def _c2c(g, x: str, axes: list[int], forward: bool) -> str:
    """The unnormalized DFT (or inverse DFT) of pair tensor ``x`` over ``axes``."""
    if not forward:
        x = conjugate(g, x)
    for axis in axes:
        x = dft(g, x, axis)
    return x if forward else conjugate(g, x)


# aten::_fft_c2c.default
def aten__fft_c2c(g, sts, outputs, self, dim, normalization, forward):
    "_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor"
    part = _part_type(sts.dtype, "aten::_fft_c2c")
    shape = sts.input_shapes[0]
    axes = _axes(dim, len(shape), "aten::_fft_c2c")
    if not axes:
        return named(g, self, outputs[0])
    x = _c2c(g, cast(g, self, part), axes, forward)
    y = _normalize(g, x, normalization, _signal_size(g, self, shape, axes), part)
    return named(g, y, outputs[0])


# aten::_fft_r2c.default
def aten__fft_r2c(g, sts, outputs, self, dim, normalization, onesided):
    "_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor"
    part = _part_type(sts.dtype, "aten::_fft_r2c")
    shape = sts.input_shapes[0]
    axes = _axes(dim, len(shape), "aten::_fft_r2c")
    if not axes:
        raise UnsupportedError("aten::_fft_r2c with dim=[]: torch refuses an empty dim too.")
    size = _signal_size(g, self, shape, axes)
    x = g.op.Unsqueeze(cast(g, self, part), _i64([-1]))  # a real signal: [..., 1]
    # the last axis first, one-sided there as torch's (Hermitian symmetry along it)
    x = dft(g, x, axes[-1], onesided=bool(onesided))
    for axis in axes[:-1]:
        x = dft(g, x, axis)
    return named(g, _normalize(g, x, normalization, size, part), outputs[0])


def _hermitian(g, x: str, axis: int, n) -> str:
    """The conjugate of the full spectrum of length ``n`` along ``axis`` whose first
    ``n // 2 + 1`` points are ``x``'s: ``X[k] = conj(X[n - k])`` above them."""
    one = _i64([1])
    if type(n) is int:
        half, kept = _i64([(n - 1) // 2]), _i64([n // 2 + 1])
    else:
        n = g.op.Reshape(n, one)
        half = g.op.Div(g.op.Sub(n, one), _i64([2]))
        kept = g.op.Add(g.op.Div(n, _i64([2])), one)
    axes = _i64([axis])
    low = g.op.Slice(x, _i64([0]), kept, axes)
    # X[(n - 1) // 2], ..., X[1]: conj(X[n - k]) for k = n // 2 + 1, ..., n - 1
    high = g.op.Slice(x, half, _i64([0]), axes, _i64([-1]))
    return g.op.Concat(conjugate(g, low), high, axis=axis)


# aten::_fft_c2r.default
def aten__fft_c2r(g, sts, outputs, self, dim, normalization, last_dim_size):
    "_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor"
    part = _part_type(sts.input_dtypes[0], "aten::_fft_c2r")
    shape = sts.input_shapes[0]
    axes = _axes(dim, len(shape), "aten::_fft_c2r")
    if not axes:
        raise UnsupportedError("aten::_fft_c2r with dim=[]: torch refuses an empty dim too.")
    last, n = axes[-1], last_dim_size
    if type(n) is int and type(shape[last]) is int and shape[last] < n // 2 + 1:
        raise UnsupportedError(
            f"aten::_fft_c2r: the input has {shape[last]} points along dim {last}, fewer "
            f"than last_dim_size // 2 + 1 = {n // 2 + 1}; torch.fft.irfft pads them first."
        )
    x = cast(g, self, part)
    if axes[:-1]:
        x = _c2c(g, x, axes[:-1], forward=False)
    # the inverse along the last axis is real: Re(DFT(conj(full spectrum))), where the
    # imaginary parts of X[0] (and X[n/2]) drop out as in pocketfft's c2r
    x = dft(g, _hermitian(g, x, last, n), last)
    real = g.op.Gather(x, _i64(0), axis=-1)
    sizes = [_signal_size(g, self, shape, axes[:-1]) if axes[:-1] else 1, n]
    if all(type(s) is int for s in sizes):
        size = sizes[0] * sizes[1]
    else:
        size = g.op.Mul(*[s if type(s) is str else _i64(s) for s in sizes])
    return named(g, _normalize(g, real, normalization, size, part), outputs[0])


# aten::stft.default
def aten_stft(
    g,
    sts,
    outputs,
    self,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    normalized=False,
    onesided=None,
    return_complex=None,
    align_to_window=None,
):
    "stft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor"  # noqa: E501
    # torch.stft pads the signal (center=True) before this call: frames start at 0 here
    if align_to_window:
        raise UnsupportedError(
            "aten::stft with align_to_window=True is not converted (frames aligned to a "
            "shorter window); leave it unset, or pad the window to n_fft yourself."
        )
    in_elem, part = sts.input_dtypes[0], _part_type(sts.input_dtypes[0], "aten::stft")
    if window is not None and g.get_rank(window) != 1:  # a complex window is [win, 2]
        raise UnsupportedError(
            "aten::stft with a complex window: ONNX's STFT takes a real window. Multiply "
            "the frames by the window yourself (Tensor.unfold) and call torch.fft.fft."
        )
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not (type(n_fft) is int and type(hop) is int and type(win) is int):
        raise UnsupportedError("aten::stft with a symbolic n_fft, hop_length or win_length.")
    complex_input = in_elem in PARTS
    one_sided = (not complex_input) if onesided is None else bool(onesided)
    x = cast(g, self, part)
    if not complex_input:
        x = g.op.Unsqueeze(x, _i64([-1]))
    batched = len(sts.input_shapes[0]) == 2
    if not batched:
        x = g.op.Unsqueeze(x, _i64([0]))
    # the window, centred in n_fft points (torch pads a shorter one with zeros both sides)
    w = np.ones(win, dtype=numpy_dtype(part)) if window is None else cast(g, window, part)
    left = (n_fft - win) // 2
    if left or n_fft - win - left:
        w = g.op.Pad(w, _i64([left, n_fft - win - left]))
    frames = g.op.STFT(x, _i64(hop), w, _i64(n_fft), onesided=int(one_sided))
    y = g.op.Transpose(frames, perm=[0, 2, 1, 3])  # torch: (batch, frequency, frame)
    if normalized:
        y = _normalize(g, y, 1, n_fft, part)
    if not batched:
        y = g.op.Squeeze(y, _i64([0]))
    return named(g, y, outputs[0])


CONVERTERS = (
    Converter("aten::_fft_c2c.default", aten__fft_c2c, complex=True),
    Converter("aten::_fft_r2c.default", aten__fft_r2c, complex=True),
    Converter("aten::_fft_c2r.default", aten__fft_c2r, complex=True),
    Converter("aten::stft.default", aten_stft, complex=True),
    # return_complex=False on a real signal: a real result, the pairs torch.view_as_real gives
    Converter("aten::stft.default", aten_stft),
)
