"""Issue 21, section 1: what is at ``filename=`` / ``report=`` is never clobbered; the proto
``to_onnx(..., filename=)`` returns references the file written for its weights (issue 32)."""

from __future__ import annotations

import os
import stat

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

import tonnx
import tonnx.pipeline.write._save
from tonnx.pipeline.write import _file_writer


class _Mlp(torch.nn.Module):
    """Weights of 1 KiB or more (streamed to the file) and less (inline in the proto)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 16)

    def forward(self, x):
        return torch.relu(self.fc(x))


def _export(filename, **kwargs):
    torch.manual_seed(0)
    model, x = _Mlp().eval(), torch.randn(2, 32)
    onx = tonnx.to_onnx(model, (x,), filename=filename, **kwargs)
    return onx, model(x).detach().numpy(), x.numpy()


def _run(model_or_path, x):
    sess = onnxruntime.InferenceSession(model_or_path, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


@pytest.fixture
def no_torch_export(monkeypatch):
    def export_must_not_run(*args, **kwargs):
        raise AssertionError("torch.export ran before the output paths were checked")

    monkeypatch.setattr(torch.export, "export", export_must_not_run)


# -- filename= ------------------------------------------------------------------------------


@pytest.mark.parametrize("external", [False, True])
def test_symlink_is_written_through_to_its_target(tmp_path, external):
    target = tmp_path / "real.onnx"
    target.write_bytes(b"old model")
    link = tmp_path / "m.onnx"
    link.symlink_to(target.name)
    _, expected, x = _export(link, external_data=external)
    assert link.is_symlink() and os.readlink(link) == "real.onnx"
    names = sorted(os.listdir(tmp_path))
    assert names == ["m.onnx", "real.onnx", *(["real.onnx.data"] if external else [])]
    np.testing.assert_allclose(_run(str(target), x), expected, atol=1e-5)
    np.testing.assert_allclose(_run(str(link), x), expected, atol=1e-5)


def test_fifo_is_refused_before_torch_export(tmp_path, no_torch_export):
    fifo = tmp_path / "m.onnx"
    os.mkfifo(fifo)
    with pytest.raises(tonnx.OutputFileError, match="it is a FIFO, not a regular file"):
        tonnx.to_onnx(_Mlp(), (torch.randn(2, 32),), filename=fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["m.onnx"]


def test_symlink_to_a_fifo_is_refused(tmp_path, no_torch_export):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "m.onnx").symlink_to("pipe")
    with pytest.raises(tonnx.OutputFileError, match="not a regular file"):
        tonnx.to_onnx(_Mlp(), (torch.randn(2, 32),), filename=tmp_path / "m.onnx")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)


def test_fifo_at_a_data_file_name_is_refused(tmp_path, no_torch_export):
    os.mkfifo(tmp_path / "m.onnx.data")
    with pytest.raises(tonnx.OutputFileError, match="m.onnx.data.*not a regular file"):
        tonnx.to_onnx(_Mlp(), (torch.randn(2, 32),), filename=tmp_path / "m.onnx")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "m.onnx.data").st_mode)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("external", [False, True])
def test_existing_files_keep_their_mode(tmp_path, external):
    path = tmp_path / "m.onnx"
    _export(path, external_data=external)
    for name in os.listdir(tmp_path):
        os.chmod(tmp_path / name, 0o600)
    _export(path, external_data=external)
    assert {n: _mode(tmp_path / n) for n in os.listdir(tmp_path)} == {
        n: 0o600 for n in (["m.onnx", "m.onnx.1.data"] if external else ["m.onnx"])
    }


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
@pytest.mark.parametrize("external", [False, True])
def test_root_keeps_the_owner_of_the_files_it_replaces(tmp_path, external):
    path = tmp_path / "m.onnx"
    _export(path, external_data=external)
    for name in os.listdir(tmp_path):
        os.chown(tmp_path / name, 1234, 5678)
    _export(path, external_data=external)
    stats = [os.stat(tmp_path / n) for n in os.listdir(tmp_path)]
    assert {(st.st_uid, st.st_gid) for st in stats} == {(1234, 5678)}


def test_new_file_gets_the_usual_mode(tmp_path):
    umask = os.umask(0o022)
    try:
        _export(tmp_path / "m.onnx")
    finally:
        os.umask(umask)
    assert _mode(tmp_path / "m.onnx") == 0o644


# -- report= --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "which", ["the model", "the model via a link", "its data file", "its other data file"]
)
def test_report_on_the_model_files_is_refused(tmp_path, no_torch_export, which):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"the previous model")
    (tmp_path / "link.md").symlink_to("m.onnx")
    report = {
        "the model": model,
        "the model via a link": tmp_path / "link.md",
        "its data file": tmp_path / "m.onnx.data",
        "its other data file": tmp_path / "m.onnx.1.data",
    }[which]
    with pytest.raises(tonnx.OutputFileError, match="report=.*is the model"):
        tonnx.to_onnx(_Mlp(), (torch.randn(2, 32),), filename=model, report=report)
    assert model.read_bytes() == b"the previous model"
    assert sorted(os.listdir(tmp_path)) == ["link.md", "m.onnx"]


@pytest.mark.parametrize("where", ["missing folder", "a folder", "a FIFO"])
def test_unwritable_report_is_refused_before_torch_export(tmp_path, no_torch_export, where):
    if where == "a FIFO":
        os.mkfifo(tmp_path / "r.md")
    report = {"missing folder": tmp_path / "no" / "r.md", "a folder": tmp_path,
              "a FIFO": tmp_path / "r.md"}[where]
    before = sorted(os.listdir(tmp_path))
    for filename in (tmp_path / "m.onnx", None):
        with pytest.raises(tonnx.OutputFileError, match="report="):
            tonnx.to_onnx(_Mlp(), (torch.randn(2, 32),), filename=filename, report=report)
    assert sorted(os.listdir(tmp_path)) == before


def test_report_through_a_symlink_keeps_the_link(tmp_path):
    (tmp_path / "real.md").write_text("old")
    (tmp_path / "r.md").symlink_to("real.md")
    _export(tmp_path / "m.onnx", report=tmp_path / "r.md")
    assert (tmp_path / "r.md").is_symlink()
    assert "# tonnx export report: succeeded" in (tmp_path / "real.md").read_text()


def test_cli_report_equal_to_output_is_refused(tmp_path, capsys):
    from tonnx.cli import main

    targets = os.path.join(os.path.dirname(os.path.dirname(__file__)), "cli", "cli_targets.py")
    out = tmp_path / "m.onnx"
    out.write_bytes(b"the previous model")
    code = main(["export", f"{targets}:mlp", "-o", str(out), "--report", str(out), "-q"])
    err = capsys.readouterr().err
    assert code == 1, err  # as for any path that cannot be written (docs/cli.md)
    assert "OutputFileError" in err and "is the model" in err and "report written" not in err
    assert out.read_bytes() == b"the previous model"


# -- the returned proto ---------------------------------------------------------------------


@pytest.mark.parametrize("external", [False, True])
def test_returned_proto_references_the_file_written(tmp_path, external):
    """Issue 32: the proto holds no second copy of the weights (it cost 1x their size and
    more time than the write on a 400 MB model). Each streamed initializer references its
    bytes in the file written (the data file, or the .onnx itself); onnx loads them."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    path = tmp_path / "a" / "m.onnx"
    onx, expected, x = _export(path, external_data=external)
    streamed = [t for t in onx.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert [t.name for t in streamed] == ["fc.weight"] and not streamed[0].raw_data  # 2 KiB
    location = {e.key: e.value for e in streamed[0].external_data}["location"]
    assert location == ("m.onnx.data" if external else "m.onnx")
    if external:  # what onnx gives for a model with external data, before loading it
        assert onnx.load(str(path), load_external_data=False) == onx
    # the documented ways to the weights: the file itself, or onnx filling this proto
    np.testing.assert_allclose(_run(str(path), x), expected, atol=1e-5)
    onnx.load_external_data_for_model(onx, str(tmp_path / "a"))
    assert not any(t.data_location == onnx.TensorProto.EXTERNAL for t in onx.graph.initializer)
    np.testing.assert_allclose(_run(onx.SerializeToString(), x), expected, atol=1e-5)
    onnx.save(onx, str(tmp_path / "b" / "other.onnx"))
    np.testing.assert_allclose(_run(str(tmp_path / "b" / "other.onnx"), x), expected, atol=1e-5)


def test_returned_proto_of_a_symlink_references_the_target(tmp_path):
    """The files go beside a symlink's target: the references resolve from its folder."""
    (tmp_path / "real").mkdir()
    (tmp_path / "m.onnx").symlink_to(os.path.join("real", "t.onnx"))
    onx, expected, x = _export(tmp_path / "m.onnx")
    onnx.load_external_data_for_model(onx, str(tmp_path / "real"))
    np.testing.assert_allclose(_run(onx.SerializeToString(), x), expected, atol=1e-5)


def test_above_the_threshold_the_proto_references_the_data_file(tmp_path, monkeypatch):
    """A model too large to hold twice: the proto is what onnx.load(filename,
    load_external_data=False) gives, references resolved from filename's folder."""
    monkeypatch.setattr(tonnx.pipeline.write._save, "EXTERNAL_DATA_THRESHOLD", 1024)
    path = tmp_path / "m.onnx"
    onx, expected, x = _export(path)
    assert os.listdir(tmp_path) != ["m.onnx"]  # external data chosen automatically
    assert onx == onnx.load(str(path), load_external_data=False)
    big = [t for t in onx.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert big and not any(t.raw_data for t in big)
    onnx.load_external_data_for_model(onx, str(tmp_path))
    np.testing.assert_allclose(_run(onx.SerializeToString(), x), expected, atol=1e-5)


def test_inline_file_over_protobuf_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(tonnx.pipeline.write._save, "PROTOBUF_LIMIT", 1024)
    with pytest.raises(tonnx.OutputFileError, match="external_data=True"):
        _export(tmp_path / "m.onnx", external_data=False)
    assert os.listdir(tmp_path) == []


# -- temporaries ----------------------------------------------------------------------------


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_are_removed_before_the_export_runs(tmp_path, no_torch_export):
    """A killed export's orphan goes at the start of the next one, even if that one fails."""
    dead = _dead_pid()
    orphan = tmp_path / f"m.onnx.data.tmp-tonnx-{dead}-0123abcd"
    orphan.write_bytes(b"\0" * 4096)
    with pytest.raises(tonnx.ExportFailedError, match="torch.export ran"):
        tonnx.to_onnx(_Mlp(), (torch.randn(2, 32),), filename=tmp_path / "m.onnx")
    assert os.listdir(tmp_path) == []


def test_file_writer_resolves_links_for_write_model(tmp_path):
    """write_model (export_modules_as_functions) shares the same rules."""
    onx, _, _ = _export(None)
    (tmp_path / "real.onnx").write_bytes(b"old")
    os.chmod(tmp_path / "real.onnx", 0o600)
    (tmp_path / "m.onnx").symlink_to("real.onnx")
    _file_writer.write_model(onx, str(tmp_path / "m.onnx"))
    assert (tmp_path / "m.onnx").is_symlink() and _mode(tmp_path / "real.onnx") == 0o600
    assert onnx.load(str(tmp_path / "real.onnx")) == onx


def test_temporary_of_a_reused_pid_is_removed(tmp_path):
    """In a container the pids restart at each run: a live process that started after the
    orphan was last written is not its writer."""
    import subprocess
    import sys
    import time

    orphan = tmp_path / "m.onnx.data.tmp-tonnx-{}-0123abcd"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = tmp_path / orphan.name.format(proc.pid)
        stale.write_bytes(b"\0" * 4096)
        an_hour_ago = time.time() - 3600
        os.utime(stale, (an_hour_ago, an_hour_ago))
        live = tmp_path / f"m.onnx.tmp-tonnx-{proc.pid}-feedbeef"  # written now: kept
        live.write_bytes(b"")
        assert _file_writer.ModelFile(str(tmp_path / "m.onnx")).clean_stale() == [stale.name]
        assert os.listdir(tmp_path) == [live.name]
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("which", ["filename", "data file", "report"])
def test_outputs_never_replace_a_weights_file(tmp_path, no_torch_export, which):
    from safetensors.torch import save_file

    torch.manual_seed(0)
    name = {"filename": "m.onnx", "data file": "m.onnx.data", "report": "r.md"}[which]
    checkpoint = tmp_path / name
    save_file(_Mlp().state_dict(), str(checkpoint))
    before = checkpoint.read_bytes()
    argument = "report" if which == "report" else "filename"
    with pytest.raises(tonnx.OutputFileError, match=f"{argument}= would replace"):
        tonnx.to_onnx(_Mlp(), (torch.randn(2, 32),), filename=tmp_path / "m.onnx",
                      weights=str(checkpoint), report=tmp_path / "r.md")
    assert checkpoint.read_bytes() == before and os.listdir(tmp_path) == [checkpoint.name]
