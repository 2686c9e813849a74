"""What the quant tests share: export a module, run it in onnxruntime, compare with torch.

Quantized results are compared exactly. The QDQ form (QuantizeLinear) divides by the scale
where torch multiplies by ``float32(1 / scale)``: ``division_ties`` finds the elements where
the two roundings differ, the one place a difference of one step is allowed (and checked).
"""

from __future__ import annotations

import numpy as np
import torch

import tonnx
from tonnx.testing import run_onnxruntime

import torch.ao.quantization.fx._decomposed  # noqa: F401  registers quantized_decomposed

qd = torch.ops.quantized_decomposed

#: integer dtypes of quantized_decomposed with their ranges
INT_DTYPES = (torch.int8, torch.uint8, torch.int16, torch.uint16)


class Op(torch.nn.Module):
    """``fn(*inputs, *constants)``: the tensors given at construction stay constants
    (buffers: the QDQ form), the ones given to forward are graph inputs (the exact form)."""

    def __init__(self, fn, **buffers):
        super().__init__()
        self.fn = fn
        for name, value in buffers.items():
            self.register_buffer(name, value)

    def forward(self, *inputs):
        return self.fn(self, *inputs)


def export_and_run(module, args, opset: int = 20):
    """(torch's outputs, onnxruntime's outputs, the model) for ``module(*args)``."""
    with torch.no_grad():
        expected = module(*args)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    onx = tonnx.to_onnx(module, tuple(args), target_opset=opset)
    got = run_onnxruntime(onx, list(args))
    return [e.numpy() for e in expected], got, onx


def division_ties(x: np.ndarray, scale) -> np.ndarray:
    """Where ``round(x / scale)`` and ``round(x * float32(1 / scale))`` differ in float32."""
    x = x.astype(np.float32)
    s = np.asarray(scale, dtype=np.float32)
    inv = (1.0 / np.asarray(scale, dtype=np.float64)).astype(np.float32)
    with np.errstate(all="ignore"):
        return np.rint(x / s) != np.rint(x * inv)


def assert_equal(expected: np.ndarray, got: np.ndarray, allowed: np.ndarray | None = None,
                 unspecified: np.ndarray | None = None) -> None:
    """Bit-equal (NaN where torch has NaN); where ``allowed``, one step of difference;
    ``unspecified`` elements are not compared (a NaN quantized: torch casts NaN to an
    integer, which C++ leaves undefined; x86 gives 0, QuantizeLinear saturates)."""
    assert expected.dtype == got.dtype, (expected.dtype, got.dtype)
    assert expected.shape == got.shape, (expected.shape, got.shape)
    if unspecified is not None:
        expected, got = expected[~unspecified], got[~unspecified]
        allowed = None if allowed is None else allowed[~unspecified]
    if expected.dtype.kind == "f":
        same = (expected == got) | (np.isnan(expected) & np.isnan(got))
    else:
        same = expected == got
    if allowed is not None:
        close = np.abs(expected.astype(np.int64) - got.astype(np.int64)) <= 1
        same = same | (allowed & close)
    bad = np.argwhere(~same)
    assert bad.size == 0, f"{len(bad)} element(s) differ, first at {bad[0].tolist()}: torch {expected[tuple(bad[0])]}, onnx {got[tuple(bad[0])]}"
