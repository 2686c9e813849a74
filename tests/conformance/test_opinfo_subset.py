"""A bounded OpInfo sweep in CI: no mismatch, and the ops served here keep passing.

The full sweep is ``python -m tests.conformance.opinfo`` (docs/conformance.md). This subset
covers the decomposition converters and the direct converters of the breadth issue, float32
plus integer samples where the op takes them, with one sample per op to stay under a minute.
"""

from __future__ import annotations

import pytest

pytest.importorskip("expecttest", reason="torch's OpInfo database needs expecttest (pip install expecttest)")

from tests.conformance.opinfo import run_op, select_ops  # noqa: E402

#: OpInfo names that must pass (float32)
MUST_PASS = (
    "sinc", "deg2rad", "rad2deg", "logaddexp", "logaddexp2", "xlogy", "isposinf", "isneginf",
    "nn.functional.mse_loss", "nn.functional.l1_loss", "nn.functional.smooth_l1_loss",
    "nn.functional.huber_loss", "nn.functional.cross_entropy", "nn.functional.nll_loss",
    "nn.functional.binary_cross_entropy", "nn.functional.binary_cross_entropy_with_logits",
    "nn.functional.kl_div", "broadcast_tensors", "kron", "trace", "rot90", "tensordot",
    "atleast_3d", "hsplit", "linalg.cross", "T", "mT", "var", "std", "quantile",
    "median", "cummax", "cummin", "searchsorted", "bucketize", "histc", "linalg.det",
)
#: OpInfo names checked on int64 samples (no float32 samples, or integer-specific code)
MUST_PASS_INT64 = (
    "bitwise_left_shift", "bitwise_right_shift", "bincount", "unique", "topk",
    "nn.functional.pad.circular",
)
#: bool samples: ONNX lacks bool Max/Min/Greater and onnxruntime a bool min/max scatter
MUST_PASS_BOOL = (
    "clamp_max", "clamp_min", "heaviside", "scatter_reduce.amin", "scatter_reduce.amax",
    "sort", "argsort",
)
#: float16/bfloat16 samples: computed in float32 as torch accumulates (Conv, AveragePool,
#: Einsum and NegativeLogLikelihoodLoss have no bfloat16, onnxruntime no float16 ScatterND sum)
MUST_PASS_HALF = (
    "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.avg_pool2d",
    "nn.functional.max_pool2d", "nn.functional.nll_loss", "nn.functional.cross_entropy",
    "einsum", "inner", "nn.functional.embedding_bag",
)
#: complex values, carried as real (..., 2) pairs: real inputs with complex results (float32),
#: and complex64 samples (the harness feeds and reads them through view_as_real)
MUST_PASS_TO_COMPLEX = ("polar", "complex", "view_as_complex")
MUST_PASS_COMPLEX = (
    "mul", "abs", "angle", "real", "imag", "view_as_real", "cat", "reshape", "transpose",
    "to", "kron",
)
#: every sample holding an empty tensor too (a 0 x 0 matrix, an empty batch): onnxruntime
#: 1.31.1 reduces empty tensors over negative axes wrongly (issue 31, .ci/corner-env)
MUST_PASS_EMPTY = ("linalg.det", "linalg.slogdet", "logdet")
#: refused with a typed error, never an invalid model (ONNX Conv takes floats only)
MUST_REFUSE_INT64 = ("nn.functional.conv2d", "nn.functional.conv_transpose1d")


def _sweep(names, dtype, empty=False):
    pattern = "^(" + "|".join(n.replace(".", r"\.") for n in names) + ")$"
    from tests.conformance.opinfo import _export_tonnx

    ops = select_ops(pattern)
    return [run_op(op, dtype, samples=1, export=_export_tonnx, dispatcher=None, empty=empty) for op in ops]


@pytest.mark.parametrize(
    ("names", "dtype"),
    [
        (MUST_PASS, "float32"), (MUST_PASS_INT64, "int64"), (MUST_PASS_BOOL, "bool"),
        (MUST_PASS_HALF, "float16"), (MUST_PASS_HALF, "bfloat16"),
        (MUST_PASS_TO_COMPLEX, "float32"), (MUST_PASS_COMPLEX, "complex64"),
    ],
)
def test_subset_passes_without_mismatch(names, dtype):
    results = _sweep(names, dtype)
    assert {r.op.split(".")[0] for r in results} >= {n.split(".")[0] for n in names}
    mismatches = [(r.op, r.detail) for r in results if r.outcome == "mismatch"]
    assert not mismatches, mismatches
    failing = [(r.op, r.outcome, r.detail) for r in results if r.outcome not in ("pass", "skipped")]
    assert not failing, failing


def test_empty_samples_pass():
    results = _sweep(MUST_PASS_EMPTY, "float32", empty=True)
    assert {r.op for r in results} == set(MUST_PASS_EMPTY)
    assert all(len(r.samples) > 1 for r in results)  # the empty samples ran
    failing = [(r.op, r.outcome, r.detail) for r in results if r.outcome != "pass"]
    assert not failing, failing


def test_integer_convolution_is_refused():
    results = _sweep(MUST_REFUSE_INT64, "int64")
    assert sorted((r.op, r.outcome) for r in results) == [(n, "unsupported") for n in MUST_REFUSE_INT64]
    assert all("ONNX Conv takes floats only" in r.detail for r in results)


def test_ties_compare_by_the_values_they_pick():
    """The harness accepts another order of equal values where torch leaves it open, and
    still catches indices that pick a wrong value or repeat a position."""
    from types import SimpleNamespace

    import torch

    from tests.conformance.opinfo import _compare_modulo_ties

    x = torch.tensor([[1, 0, 1, 1], [0, 0, 2, 0]])
    torch_values, torch_indices = torch.tensor([[1, 1], [2, 0]]), torch.tensor([[2, 0], [2, 3]])
    sample = SimpleNamespace(args=(2, -1), kwargs={})
    expected = [torch_values, torch_indices]

    def check(indices):
        return _compare_modulo_ties("topk", sample, x, expected, [torch_values.numpy(), indices], "int64")

    assert check(torch.tensor([[0, 3], [2, 0]]).numpy()) == ""
    assert "other values" in check(torch.tensor([[0, 1], [2, 0]]).numpy())
    assert "repeat" in check(torch.tensor([[0, 0], [2, 1]]).numpy())
