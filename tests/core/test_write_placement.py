"""Strided arrays (weights stored transposed) are written in C order slab by slab, and
checkpoint tensors are read front to back into memory of their own."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

safetensors_torch = pytest.importorskip("safetensors.torch")

from tonnx._errors import OutputFileError  # noqa: E402
from tonnx.pipeline.write import _sinks  # noqa: E402
from tonnx.pipeline.write._weights import SafetensorsWeights  # noqa: E402

RNG = np.random.default_rng(0)
ARRAYS = {
    "f32": RNG.standard_normal((300, 70), dtype=np.float32).T,  # transposed view
    "bf16": RNG.standard_normal((33, 129)).astype(ml_dtypes.bfloat16).T,
    "i64": np.arange(4 * 5 * 6, dtype=np.int64).reshape(4, 5, 6).transpose(2, 0, 1),
    "dense": RNG.standard_normal(1000, dtype=np.float32),
    "bool": (RNG.standard_normal((40, 9)) > 0).T,
}


def _planned():
    planned, offset = [], 0
    for name, array in ARRAYS.items():
        offset += (-offset) % 4096
        planned.append((name, array, offset, array.nbytes))
        offset += array.nbytes
    return planned


@pytest.mark.parametrize("chunk", [1 << 26, 1000])  # one slab; several, the last one short
def test_strided_payloads_land_in_c_order(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(_sinks, "PLACE_CHUNK", chunk)
    assert not ARRAYS["f32"].flags.c_contiguous
    out = tmp_path / "data.bin"
    planned = _planned()
    with open(out, "wb") as f:
        _sinks.write_tensors(f, planned, lambda name, value: value)
    raw = out.read_bytes()
    assert len(raw) == planned[-1][2] + planned[-1][3]
    position = 0
    for name, array, offset, size in planned:
        assert raw[position:offset] == b"\0" * (offset - position), f"gap before {name}"
        assert raw[offset : offset + size] == np.ascontiguousarray(array).tobytes(), name
        position = offset + size


def test_checkpoint_tensors_are_read_into_memory_of_their_own(tmp_path):
    tensors = {"w": torch.randn(64, 48), "h": torch.randn(10, dtype=torch.bfloat16)}
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file(tensors, str(path))
    before = path.read_bytes()
    weights = SafetensorsWeights(str(path))
    for name, want in tensors.items():
        got = weights.load(name, torch.empty(want.shape, dtype=want.dtype, device="meta"))
        assert got.dtype == want.dtype and torch.equal(got, want)
        got.zero_()  # memory of its own: the checkpoint keeps its bytes
    assert path.read_bytes() == before


def test_a_derived_transpose_is_written_from_a_strided_view(tmp_path):
    weight = torch.randn(96, 40)
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file({"w": weight}, str(path))

    class Transposed:
        sources = (("w", torch.empty(96, 40, device="meta")),)

        @staticmethod
        def compute(w):
            return w.T

    weights = SafetensorsWeights(str(path)).with_derivations({"w.t": Transposed})
    like = torch.empty(40, 96, device="meta")
    payload = weights.payload("w.t", like)
    assert isinstance(payload, np.ndarray) and not payload.flags.c_contiguous  # no copy yet
    out = tmp_path / "data.bin"
    with open(out, "wb") as f:
        _sinks.write_tensors(f, [("w.t", like, 0, payload.nbytes)], weights.payload)
    np.testing.assert_array_equal(np.fromfile(out, np.float32).reshape(40, 96), weight.numpy().T)


def test_a_checkpoint_cut_short_is_a_typed_error(tmp_path):
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file({"w": torch.randn(64, 48)}, str(path))
    weights = SafetensorsWeights(str(path))  # the header is read here, whole
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 100)
    with pytest.raises(OutputFileError, match="ends inside a tensor"):
        weights.load("w", torch.empty(64, 48, device="meta"))
