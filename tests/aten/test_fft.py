"""Hypothesis tests of the fft converters: torch eager against onnxruntime.

The ``aten::_fft_*`` ops are called directly (``torch.fft.*`` reach prims through torch's
refs: ``tests/prims/test_fft.py``); ``stft`` through ``torch.stft``. Complex inputs and
outputs are the model's own: tonnx feeds and returns them as real pairs [..., 2].
Lengths include odd and prime sizes (no power-of-two shortcut), the opset both forms of
ONNX's DFT (axis an attribute before 20, an input from 20).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, check_op, make_tensor, op_module, seeds, shapes

COVERS = {
    "aten::_fft_c2c.default (complex)",
    "aten::_fft_r2c.default (complex)",
    "aten::_fft_c2r.default (complex)",
    "aten::stft.default (complex)",
    "aten::stft.default",
}

A = torch.ops.aten
FLOATS = st.sampled_from([torch.float32, torch.float64])
OPSETS = st.sampled_from([18, 20])


def tol(dtype: torch.dtype, points: int = 16) -> dict:
    """A transform sums ``points`` terms of |x| <= 4 (make_tensor's range): its rounding
    error grows with that sum, more than its result, which may cancel to near 0."""
    eps = 1e-14 if dtype in (torch.float64, torch.complex128) else 1e-6
    return {"atol": max(eps * 4 * points, 100 * eps), "rtol": 100 * eps}


def points(shape, dims) -> int:
    return int(torch.tensor([shape[d] for d in dims]).prod())


def complex_tensor(seed: int, shape, dtype: torch.dtype) -> torch.Tensor:
    """A complex tensor whose parts are ``dtype`` (float32: complex64)."""
    return torch.complex(make_tensor(seed, shape, dtype), make_tensor(seed + 1, shape, dtype))


@st.composite
def signal(draw, min_rank: int = 1):
    """(shape, dims): sizes 1..9 (odd and prime ones too), distinct dims (non-negative: the
    graph's, torch's kernels assert on negative ones)."""
    shape = draw(shapes(min_rank=min_rank, max_rank=3, max_side=9))
    rank = len(shape)
    return shape, draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))


@given(case=signal(), dtype=FLOATS, seed=seeds(), norm=st.integers(0, 2), forward=st.booleans(), opset=OPSETS)
def test_fft_c2c(case, dtype, seed, norm, forward, opset):
    shape, dims = case
    z = complex_tensor(seed, shape, dtype)
    check_op(
        lambda z: A._fft_c2c(z, dims, norm, forward),
        [z],
        expect_op="aten::_fft_c2c.default",
        target_opset=opset,
        **tol(dtype, points(shape, dims)),
    )


@given(case=signal(), dtype=FLOATS, seed=seeds(), norm=st.integers(0, 2), onesided=st.booleans(), opset=OPSETS)
def test_fft_r2c(case, dtype, seed, norm, onesided, opset):
    shape, dims = case
    x = make_tensor(seed, shape, dtype)
    check_op(
        lambda x: A._fft_r2c(x, dims, norm, onesided),
        [x],
        expect_op="aten::_fft_r2c.default",
        target_opset=opset,
        **tol(dtype, points(shape, dims)),
    )


@given(case=signal(), dtype=FLOATS, seed=seeds(), norm=st.integers(0, 2), data=st.data(), opset=OPSETS)
def test_fft_c2r(case, dtype, seed, norm, data, opset):
    """Any spectrum, not only a Hermitian one: the imaginary parts torch's c2r ignores
    (X[0], X[n/2]) are ignored here too."""
    shape, dims = case
    m = shape[dims[-1]]
    n = data.draw(st.integers(max(1, 2 * m - 2), 2 * m - 1))  # n // 2 + 1 == m, as torch asserts
    z = complex_tensor(seed, shape, dtype)
    check_op(
        lambda z: A._fft_c2r(z, dims, norm, n),
        [z],
        expect_op="aten::_fft_c2r.default",
        target_opset=opset,
        **tol(dtype, points(shape, dims[:-1]) * n),
    )


def test_fft_on_dynamic_sizes():
    """The normalization and the Hermitian extension read the sizes at run time."""

    class Spectra(torch.nn.Module):
        def forward(self, x, z):
            return (
                A._fft_r2c(x, [0, 1], 1, True),
                A._fft_c2c(z, [0, 1], 2, False),
                A._fft_c2r(z, [1], 2, 2 * z.shape[1] - 1),
            )

    dims = [torch.export.Dim(name) for name in ("a", "b", "c", "d")]
    x, z = torch.randn(4, 6), complex_tensor(0, (3, 5), torch.float32)
    check_model(
        Spectra(),
        (x, z),
        dynamic_shapes=(dict(enumerate(dims[:2])), dict(enumerate(dims[2:]))),
        other_inputs=[(torch.randn(7, 9), complex_tensor(1, (7, 4), torch.float32))],
        **tol(torch.float32, 63),
    )


@st.composite
def stft_case(draw):
    n_fft = draw(st.integers(4, 9))  # hop_length=None is n_fft // 4, which must be > 0
    win_length = draw(st.one_of(st.none(), st.integers(1, n_fft)))
    return {
        "n_fft": n_fft,
        "hop_length": draw(st.one_of(st.none(), st.integers(1, n_fft))),
        "win_length": win_length,
        "window": draw(st.sampled_from([None, "hann", "random"])),
        "center": draw(st.booleans()),
        "pad_mode": draw(st.sampled_from(["reflect", "constant", "replicate", "circular"])),
        "normalized": draw(st.booleans()),
        "onesided": draw(st.sampled_from([None, True, False])),
        "return_complex": draw(st.booleans()),
    }


@given(
    case=stft_case(),
    batch=st.sampled_from([(), (2,)]),
    length=st.integers(9, 20),
    complex_input=st.booleans(),
    dtype=FLOATS,
    seed=seeds(),
    opset=OPSETS,
)
def test_stft(case, batch, length, complex_input, dtype, seed, opset):
    """torch.stft: center pads (any pad_mode), then aten::stft on frames from 0."""
    shape = (*batch, length)
    x = complex_tensor(seed, shape, dtype) if complex_input else make_tensor(seed, shape, dtype)
    if complex_input and case["onesided"]:
        return  # torch refuses a one-sided transform of a complex signal
    if not case["return_complex"] and complex_input:
        return  # torch refuses return_complex=False for a complex signal
    win = case["win_length"] or case["n_fft"]
    window = {
        None: None,
        "hann": torch.hann_window(win, dtype=dtype),
        "random": make_tensor(seed + 2, (win,), dtype, 0.0, 1.0),
    }[case.pop("window")]
    tensors = [x] if window is None else [x, window]

    def stft(x, window=None):
        return torch.stft(x, window=window, **case)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # return_complex=False and the rectangular window warn
        check_op(stft, tensors, expect_op="aten::stft.default", target_opset=opset, **tol(dtype))


def test_stft_with_a_complex_window_is_refused():
    x, window = torch.randn(16), torch.randn(4, dtype=torch.complex64)
    model = op_module(lambda x, w: torch.stft(x, 4, window=w, return_complex=True), 2)
    with pytest.raises(tonnx.UnsupportedError, match="complex window"):
        tonnx.to_onnx(model, (x, window))
