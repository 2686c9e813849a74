"""Hypothesis tests of the Fourier prims, through ``torch.fft.*``: torch eager against
onnxruntime.

``torch.fft.fft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft``, ``fftn``... reach
``prims::fft_r2c``/``fft_c2c``/``fft_c2r`` and ``prims::conj``/``conj_physical`` through torch's
refs (the aten pack's decomposition converters); ``n``/``s`` (trim or zero-pad) and the
norm modes are the refs' own ops around the prims. Complex inputs and outputs are the
model's own: tonnx feeds and returns them as real pairs [..., 2].
"""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import check_model, make_tensor, seeds, shapes

COVERS = {
    "prims::fft_r2c.default",
    "prims::fft_c2c.default",
    "prims::fft_c2r.default",
    "prims::conj_physical.default",
    "prims::conj.default",
}

FFT = torch.fft
NORMS = st.sampled_from([None, "backward", "ortho", "forward"])


def tol(dtype: torch.dtype, points: int) -> dict:
    """A transform sums ``points`` terms of |x| <= 4: its rounding grows with that sum."""
    eps = 1e-14 if dtype == torch.float64 else 1e-6
    return {"atol": max(eps * 4 * points, 100 * eps), "rtol": 100 * eps}


def complex_tensor(seed: int, shape, dtype: torch.dtype) -> torch.Tensor:
    return torch.complex(make_tensor(seed, shape, dtype), make_tensor(seed + 1, shape, dtype))


def check_fns(fns, tensors, **kwargs):
    """One model with one output per function: one export for all of them."""

    class Fns(torch.nn.Module):
        def forward(self, *xs):
            return tuple(fn(*xs) for fn in fns)

    return check_model(Fns(), tuple(tensors), **kwargs)


@given(
    shape=shapes(min_rank=1, max_rank=3, min_side=2, max_side=9),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=seeds(),
    norm=NORMS,
    data=st.data(),
    opset=st.sampled_from([18, 20]),
)
def test_one_dimensional_transforms(shape, dtype, seed, norm, data, opset):
    rank = len(shape)
    dim = data.draw(st.integers(-rank, rank - 1))
    n = data.draw(st.one_of(st.none(), st.integers(2, 12)))  # trims or zero-pads
    x, z = make_tensor(seed, shape, dtype), complex_tensor(seed + 2, shape, dtype)
    fns = [
        lambda x, z: FFT.fft(x, n, dim, norm),
        lambda x, z: FFT.fft(z, n, dim, norm),
        lambda x, z: FFT.ifft(z, n, dim, norm),
        lambda x, z: FFT.rfft(x, n, dim, norm),
        lambda x, z: FFT.irfft(z, n, dim, norm),
        lambda x, z: FFT.hfft(z, n, dim, norm),
        lambda x, z: FFT.ihfft(x, n, dim, norm),
    ]
    points = max(n or 0, 2 * shape[dim])
    check_fns(fns, [x, z], target_opset=opset, **tol(dtype, points))


@given(
    shape=shapes(min_rank=2, max_rank=3, min_side=2, max_side=6),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=seeds(),
    norm=NORMS,
    data=st.data(),
)
def test_n_dimensional_transforms(shape, dtype, seed, norm, data):
    rank = len(shape)
    dims = data.draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    x, z = make_tensor(seed, shape, dtype), complex_tensor(seed + 2, shape, dtype)
    fns = [
        lambda x, z: FFT.fftn(z, dim=dims, norm=norm),
        lambda x, z: FFT.ifftn(z, dim=dims, norm=norm),
        lambda x, z: FFT.rfftn(x, dim=dims, norm=norm),
        lambda x, z: FFT.irfftn(z, dim=dims, norm=norm),
        lambda x, z: FFT.hfftn(z, dim=dims, norm=norm),
        lambda x, z: FFT.ihfftn(x, dim=dims, norm=norm),
        lambda x, z: FFT.fft2(x, norm=norm),
        lambda x, z: FFT.irfft2(z, norm=norm),
    ]
    points = 2 * int(torch.tensor(shape).prod())
    check_fns(fns, [x, z], **tol(dtype, points))
