"""Streamed checkpoint tensors stored as the model declares them are copied file to file."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

safetensors_torch = pytest.importorskip("safetensors.torch")

from tonnx.pipeline.write import _sinks  # noqa: E402
from tonnx.pipeline.write._weights import SafetensorsWeights  # noqa: E402

TENSORS = {
    "w": torch.randn(5, 7),
    "ids": torch.arange(6, dtype=torch.int64).reshape(2, 3),
    "flags": torch.tensor([True, False, True]),
    "half": torch.randn(4, dtype=torch.bfloat16),
}


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file(TENSORS, str(path), metadata={"format": "pt"})
    return SafetensorsWeights(str(path), cast_floats=True), path


def _meta(t, dtype=None):
    return torch.empty(t.shape, dtype=dtype or t.dtype, device="meta")


def test_ranges_hold_the_tensors_bytes(source):
    weights, path = source
    raw = path.read_bytes()
    for name in ("w", "ids", "flags", "half"):
        found = weights.file_range(name, _meta(TENSORS[name]))
        assert found is not None and found.path == str(path)
        want = TENSORS[name].view(torch.uint8) if name == "half" else TENSORS[name]
        assert raw[found.offset : found.offset + found.nbytes] == want.numpy().tobytes()


def test_no_range_where_bytes_change_or_are_computed(source):
    weights, _ = source
    # stored bfloat16, declared float32: cast as it is read
    assert weights.file_range("half", _meta(TENSORS["half"], torch.float32)) is None
    assert weights.file_range("w", torch.empty(7, 5, device="meta")) is None  # another shape
    assert weights.file_range("missing", torch.empty(1, device="meta")) is None  # payload says why
    assert weights.file_range("w", TENSORS["w"]) is None  # in memory already
    derived = weights.with_derivations({"w": object()})
    assert derived.file_range("w", _meta(TENSORS["w"])) is None


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_written_file_is_the_same_either_way(source, monkeypatch, tmp_path, kernel_copy):
    weights, _ = source
    if not kernel_copy:
        def refuse(*args):
            raise OSError("no copy_file_range here")

        monkeypatch.setattr(os, "copy_file_range", refuse, raising=False)
    planned, offset = [], 0
    for name in ("w", "ids", "flags", "half"):
        value = _meta(TENSORS[name], torch.float32 if name == "half" else None)
        offset += (-offset) % 4096
        size = value.numel() * value.element_size()
        planned.append((name, value, offset, size))
        offset += size
    out = tmp_path / "data.bin"
    with open(out, "wb") as f:  # bytes through memory only, for comparison
        _sinks.write_tensors(f, planned, weights.payload)
    through_memory = out.read_bytes()
    with open(out, "wb") as f:
        _sinks.write_tensors(f, planned, weights.payload, weights.file_range)
    assert out.read_bytes() == through_memory
    half = np.frombuffer(through_memory, np.float32, 4, planned[3][2])
    np.testing.assert_array_equal(half, TENSORS["half"].float().numpy())


def test_a_range_past_the_end_is_an_error(tmp_path):
    from tonnx import OutputFileError

    short = tmp_path / "short.bin"
    short.write_bytes(b"abc")
    with pytest.raises(OutputFileError, match="ends before"):
        with open(tmp_path / "o", "wb") as out:
            _sinks.copy_range(_sinks.FileRange(str(short), 0, 10), out.fileno(), 0)
