"""Issue 31, item 12: a model named up to the filesystem's limit (NAME_MAX) is written, with its
data file when its name fits; a longer name gets a typed error saying the limit. An interrupted
write (KeyboardInterrupt, SIGTERM) leaves no temporary."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto

import tonnx
from tonnx.builder import GraphBuilder
from tonnx.pipeline.write import _file_writer


def _name_max(folder) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


def _named(folder, size: int) -> str:
    """A model path in ``folder`` whose name has ``size`` bytes (ending in .onnx)."""
    return str(folder / ("m" * (size - len(".onnx")) + ".onnx"))


def _builder(seed: int = 0, tensors: int = 2) -> GraphBuilder:
    gen = torch.Generator().manual_seed(seed)
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (16,))
    y = "x"
    for i in range(tensors):
        y = g.op.Add(y, g.make_initializer(f"w{i}", torch.randn(16, 16, generator=gen), dedup=False))
    g.make_tensor_output(y, TensorProto.FLOAT, (16, 16))
    return g


def _weights(path: str) -> dict[str, np.ndarray]:
    return {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


@pytest.mark.parametrize("external", [False, True])
def test_the_longest_name_the_filesystem_takes_is_written(tmp_path, external):
    """Today's limit is NAME_MAX for the model, NAME_MAX - 7 with a data file (named
    ``<name>.1.data`` on overwrite); the temporaries' suffix no longer counts."""
    size = _name_max(tmp_path) - (len(".1.data") if external else 0)
    path = _named(tmp_path, size)
    for seed in (0, 1):  # a new file, then an overwrite (the other data file name)
        g = _builder(seed)
        _file_writer.save(g, path, external_data=external)
        np.testing.assert_array_equal(_weights(path)["w0"], g.get_constant("w0"))
    data = [os.path.basename(path) + ".1.data"] if external else []
    assert sorted(os.listdir(tmp_path)) == sorted([os.path.basename(path), *data])


def test_to_onnx_and_report_with_the_longest_names(tmp_path):
    size = _name_max(tmp_path)
    path, report = _named(tmp_path, size), str(tmp_path / ("r" * (size - 3) + ".md"))
    model = torch.nn.Linear(32, 16)
    tonnx.to_onnx(model, (torch.rand(2, 32),), filename=path, report=report)
    assert sorted(os.listdir(tmp_path)) == sorted([os.path.basename(path), os.path.basename(report)])
    np.testing.assert_array_equal(_weights(path)["weight"], model.weight.detach().numpy())


@pytest.fixture
def no_torch_export(monkeypatch):
    def export_must_not_run(*args, **kwargs):
        raise AssertionError("torch.export ran before the output path was checked")

    monkeypatch.setattr(torch.export, "export", export_must_not_run)


def test_a_name_over_the_limit_is_refused_before_torch_export(tmp_path, no_torch_export):
    limit = _name_max(tmp_path)
    path = _named(tmp_path, limit + 1)
    with pytest.raises(tonnx.OutputFileError, match=f"{limit + 1} bytes, over the {limit}-byte limit .*NAME_MAX"):
        tonnx.to_onnx(torch.nn.Linear(32, 16), (torch.rand(2, 32),), filename=path)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("over", [1, 7])
def test_a_data_file_name_over_the_limit_is_refused(tmp_path, no_torch_export, over):
    """The model's name fits, its data file's does not: said before torch.export, with the
    longest model name that works."""
    limit = _name_max(tmp_path)
    path = _named(tmp_path, limit - len(".1.data") + over)
    with pytest.raises(tonnx.OutputFileError, match=f"NAME_MAX.*at most {limit - 7} bytes"):
        tonnx.to_onnx(torch.nn.Linear(32, 16), (torch.rand(2, 32),), filename=path, external_data=True)
    with pytest.raises(tonnx.OutputFileError, match=f"at most {limit - 7} bytes"):
        _file_writer.save(_builder(), path, external_data=True)
    assert os.listdir(tmp_path) == []


def test_temporaries_of_a_long_name_are_short_and_cleaned(tmp_path):
    """A killed write of a long-named model left a temporary under the short name: the next
    write to that path removes it, and not a temporary of another model."""
    path = _named(tmp_path, _name_max(tmp_path))
    files = _file_writer.ModelFile(path)
    leftover = os.path.basename(files.tmp(files.base))
    assert len(leftover) < 64
    dead = _dead_pid()
    orphan = tmp_path / leftover.replace(f"-{os.getpid()}-", f"-{dead}-")
    orphan.write_bytes(b"partial")
    another = _file_writer.ModelFile(_named(tmp_path, _name_max(tmp_path) - 1))
    other = tmp_path / os.path.basename(another.tmp(another.base)).replace(f"-{os.getpid()}-", f"-{dead}-")
    other.write_bytes(b"")
    _file_writer.save(_builder(), path, external_data=False)
    assert sorted(os.listdir(tmp_path)) == sorted([os.path.basename(path), other.name])


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- interrupted writes ------------------------------------------------------------------------


@pytest.mark.parametrize("external", [False, True])
def test_keyboard_interrupt_during_the_write_leaves_the_old_model(tmp_path, external):
    path = str(tmp_path / "m.onnx")
    old = _builder(0)
    _file_writer.save(old, path, external_data=external)
    before = sorted(os.listdir(tmp_path))

    def interrupted(name, value):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _file_writer.save(_builder(1), path, external_data=external, payload=interrupted)
    assert sorted(os.listdir(tmp_path)) == before
    np.testing.assert_array_equal(_weights(path)["w0"], old.get_constant("w0"))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


_SLOW_WRITE = textwrap.dedent("""
    import time
    import numpy as np
    from onnx import TensorProto
    from tonnx.builder import GraphBuilder
    from tonnx.pipeline.write import _file_writer, _sinks

    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (16,))
    y = "x"
    for i in range(40):
        y = g.op.Add(y, g.make_initializer(f"w{{i}}", np.full((16, 16), i, np.float32), dedup=False))
    g.make_tensor_output(y, TensorProto.FLOAT, (16, 16))

    def slow(name, value):
        print("writing", flush=True)  # the temporaries exist: the parent sends SIGTERM
        time.sleep(0.3)
        return _sinks.default_payload(name, value)

    _file_writer.save(g, {path!r}, external_data={external}, payload=slow)
    print("finished", flush=True)
""")


@pytest.mark.parametrize("external", [False, True])
def test_sigterm_during_the_write_leaves_no_temporary(tmp_path, external):
    """SIGTERM's default action skips every ``finally``: the writer turns it into an
    exception while it writes, cleans up, then ends the process by SIGTERM as it would."""
    path = str(tmp_path / "m.onnx")
    old = _builder(0)
    _file_writer.save(old, path, external_data=external)
    before = sorted(os.listdir(tmp_path))
    code = _SLOW_WRITE.format(path=path, external=external)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"
        assert any(".tmp-tonnx-" in name for name in os.listdir(tmp_path))
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM and "finished" not in out
    assert sorted(os.listdir(tmp_path)) == before
    np.testing.assert_array_equal(_weights(path)["w0"], old.get_constant("w0"))


def test_a_sigterm_handler_of_the_user_is_kept(tmp_path):
    def mine(signum, frame):
        pass

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        _file_writer.save(_builder(), str(tmp_path / "m.onnx"), external_data=False)
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)
