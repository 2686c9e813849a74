"""Model files: weights streamed from the tensors, bytes equal to onnx's own serialization,
consistent pairs, unwritable paths refused before torch.export."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, numpy_helper

import tonnx
from tonnx.builder import GraphBuilder
from tonnx.pipeline.write import _file_writer
from tonnx.testing import run_onnxruntime


def _builder(seed: int = 0) -> GraphBuilder:
    """A graph whose initializers cover every layout: large and small, numpy and torch,
    float16/bfloat16/bool/int64, 0-d, a non-contiguous torch view."""
    gen = torch.Generator().manual_seed(seed)
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (64, 64))
    w = g.make_initializer("w", torch.randn(64, 64, generator=gen), dedup=False)
    wt = g.make_initializer("wt", torch.randn(64, 64, generator=gen).t(), dedup=False)  # not contiguous
    b = g.make_initializer("b", np.random.default_rng(seed).standard_normal(64).astype(np.float32))
    y = g.op.Add(g.op.MatMul(g.op.MatMul("x", w), wt), b)
    g.make_initializer("h", torch.randn(600, generator=gen).half(), dedup=False)
    g.make_initializer("bf", torch.randn(600, generator=gen).bfloat16(), dedup=False)
    g.make_initializer("mask", torch.rand(2000, generator=gen) > 0.5, dedup=False)
    g.make_initializer("ids", np.arange(300, dtype=np.int64), dedup=False)
    g.make_initializer("scalar", np.array(2.5, dtype=np.float32), dedup=False)
    g.make_tensor_output(y, TensorProto.FLOAT, (64, 64))
    return g


def test_inline_file_bytes_equal_onnx_serialization(tmp_path):
    g = _builder()
    path = str(tmp_path / "m.onnx")
    returned = _file_writer.save(g, path, external_data=False)
    expected = g.to_onnx()
    with open(path, "rb") as f:
        assert f.read() == expected.SerializeToString()
    loaded = onnx.load(path)
    assert loaded == expected
    values = {t.name: numpy_helper.to_array(t) for t in loaded.graph.initializer}
    np.testing.assert_array_equal(values["wt"], g.get_constant("wt"))
    np.testing.assert_array_equal(values["bf"].view(np.uint16), g.get_constant("bf").view(np.uint16))
    assert values["bf"].dtype == ml_dtypes.bfloat16 or values["bf"].dtype == np.uint16
    np.testing.assert_array_equal(values["mask"], g.get_constant("mask"))
    # the returned proto holds no copy of the streamed weights: each references its bytes
    # inside the .onnx (issue 32: holding them again cost 1x the weights and 2.7 s on 400 MB)
    streamed = {t.name for t in returned.graph.initializer if t.data_location == TensorProto.EXTERNAL}
    assert streamed == {"w", "wt", "h", "bf", "mask", "ids"}
    with open(path, "rb") as f:
        for t in returned.graph.initializer:
            if t.name in streamed:
                assert not t.raw_data
                where = {e.key: e.value for e in t.external_data}
                assert where["location"] == "m.onnx"
                f.seek(int(where["offset"]))
                raw = f.read(int(where["length"]))
                assert raw == next(i for i in expected.graph.initializer if i.name == t.name).raw_data
    onnx.load_external_data_for_model(returned, str(tmp_path))
    for t in returned.graph.initializer:
        t.ClearField("data_location")  # onnx sets it to DEFAULT, the file does not hold it
    assert returned == expected
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    (y,) = run_onnxruntime(loaded, [x])
    np.testing.assert_allclose(y, x @ values["w"] @ values["wt"] + values["b"], rtol=1e-4, atol=1e-4)


def test_external_data_file_matches_the_weights(tmp_path):
    g = _builder()
    path = str(tmp_path / "m.onnx")
    model = _file_writer.save(g, path, external_data=True)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnx.data"]
    assert model == onnx.load(path, load_external_data=False)
    assert {t.name for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL} == {
        "w", "wt", "h", "bf", "mask", "ids"
    }
    loaded = onnx.load(path)
    for t in loaded.graph.initializer:
        np.testing.assert_array_equal(
            numpy_helper.to_array(t).reshape(-1).view(np.uint8),
            np.ascontiguousarray(g.get_constant(t.name)).reshape(-1).view(np.uint8),
        )


def test_in_memory_proto_equals_the_file(tmp_path):
    g = _builder()
    path = str(tmp_path / "m.onnx")
    _file_writer.save(g, path, external_data=False)
    assert onnx.load(path) == g.to_onnx()


def _listing(folder) -> list[str]:
    return sorted(os.listdir(folder))


def test_overwriting_external_data_alternates_names_and_leaves_one_pair(tmp_path):
    path = str(tmp_path / "m.onnx")
    seen = []
    for seed in range(3):
        g = _builder(seed)
        _file_writer.save(g, path, external_data=True)
        seen.append(_listing(tmp_path))
        loaded = onnx.load(path)
        got = {t.name: numpy_helper.to_array(t) for t in loaded.graph.initializer}
        np.testing.assert_array_equal(got["w"], g.get_constant("w"))
    assert seen == [
        ["m.onnx", "m.onnx.data"], ["m.onnx", "m.onnx.1.data"], ["m.onnx", "m.onnx.data"]
    ]
    # back to inline: the data file nothing references any more is removed
    _file_writer.save(_builder(), path, external_data=False)
    assert _listing(tmp_path) == ["m.onnx"]


def test_crash_before_the_model_switch_keeps_the_old_pair(tmp_path, monkeypatch):
    """The new data file is in place, the .onnx switch fails: the old model still loads with
    its own weights, and the next write ends with a single consistent pair."""
    path = str(tmp_path / "m.onnx")
    old = _builder(0)
    _file_writer.save(old, path, external_data=True)
    real_replace = os.replace

    def replace(src, dst):
        if dst == path:
            raise OSError("simulated crash between the renames")
        real_replace(src, dst)

    monkeypatch.setattr(_file_writer.os, "replace", replace)
    with pytest.raises(tonnx.OutputFileError, match="simulated crash"):
        _file_writer.save(_builder(1), path, external_data=True)
    monkeypatch.setattr(_file_writer.os, "replace", real_replace)
    assert _listing(tmp_path) == ["m.onnx", "m.onnx.data"]
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    np.testing.assert_array_equal(got["w"], old.get_constant("w"))


def test_crash_leftovers_are_recognized_by_the_next_write(tmp_path):
    """What a process killed between the renames leaves (a new, unreferenced data file and a
    temporary model of a dead pid) does not confuse the next write and is removed by it."""
    path = str(tmp_path / "m.onnx")
    old = _builder(0)
    _file_writer.save(old, path, external_data=True)
    dead = _dead_pid()
    (tmp_path / "m.onnx.1.data").write_bytes(b"new data of a crashed export")
    (tmp_path / f"m.onnx.tmp-tonnx-{dead}-0123abcd").write_bytes(b"partial model")
    (tmp_path / f"m.onnx.data.tmp-tonnx-{dead}-0123abcd").write_bytes(b"partial data")
    live = tmp_path / f"m.onnx.tmp-tonnx-{os.getpid()}-feedbeef"  # a live writer's: kept
    live.write_bytes(b"")
    other = tmp_path / f"other.onnx.tmp-tonnx-{dead}-0123abcd"  # another model's: not ours
    other.write_bytes(b"")
    # the old model still references m.onnx.data, untouched by the leftovers
    np.testing.assert_array_equal(
        numpy_helper.to_array(onnx.load(path).graph.initializer[0]), old.get_constant("w")
    )
    new = _builder(1)
    _file_writer.save(new, path, external_data=True)
    live.unlink()
    assert _listing(tmp_path) == ["m.onnx", "m.onnx.1.data", other.name]
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    np.testing.assert_array_equal(got["w"], new.get_constant("w"))


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


class _Neuron(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 1)

    def forward(self, x):
        return torch.sigmoid(self.linear(x))


@pytest.mark.parametrize("where", ["missing folder", "a folder", "proc"])
def test_unwritable_path_fails_before_torch_export(tmp_path, monkeypatch, where):
    def export_must_not_run(*args, **kwargs):
        raise AssertionError("torch.export ran before the output path was checked")

    monkeypatch.setattr(torch.export, "export", export_must_not_run)
    filename = {
        "missing folder": tmp_path / "no" / "m.onnx",
        "a folder": tmp_path,
        "proc": "/proc/tonnx-unwritable.onnx",
    }[where]
    before = _listing(tmp_path)
    with pytest.raises(tonnx.OutputFileError, match="Cannot write"):
        tonnx.to_onnx(_Neuron(), (torch.rand(5, 3),), filename=filename)
    assert _listing(tmp_path) == before


def test_write_fails_cleanly_when_the_disk_refuses(tmp_path, monkeypatch):
    """An OSError while writing (disk full) is an OutputFileError; no temporary is left."""
    path = str(tmp_path / "m.onnx")

    def full(name, value):
        raise OSError(28, "No space left on device")

    for external in (False, True):
        with pytest.raises(tonnx.OutputFileError, match="No space left"):
            _file_writer.save(_builder(), path, external_data=external, payload=full)
        assert _listing(tmp_path) == []
