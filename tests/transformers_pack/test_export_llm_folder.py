"""``tonnx export-llm``'s output folder: the user's things are the user's (issue 31, items 2.1
to 2.4, 12 and 14).

OUT is resolved before anything is decided: an empty path or SOURCE itself is refused; a
symlink is written through; files tonnx did not write stay; OUT's name may take 255 bytes;
SIGTERM removes the temporary folder; ``-q`` prints nothing. The exports skip the greedy
check (``verify=False``) where the folder is what the test is about.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tonnx.cli import main

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import llm_folders  # noqa: E402

EXPORTED = ["genai_config.json", "model.onnx", "model.onnx.data", "tokenizer.json", "tokenizer_config.json"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    folder = tmp_path_factory.mktemp("src") / "llama"
    llm_folders.save_folder("llama", folder)
    return folder


def _export(source, out, **options):
    from tonnx_transformers import export_llm

    return export_llm(source, out, verify=False, **options)


def _tree(folder) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)


def test_an_empty_output_path_is_refused_and_nothing_is_touched(tmp_path, source, monkeypatch, capsys):
    """``-o ""`` used to empty the current folder (the source with it) and write there."""
    work = tmp_path / "work"
    shutil.copytree(source, work / "llama")
    (work / "notes.txt").write_text("mine")
    before = _tree(work)
    monkeypatch.chdir(work)
    assert main(["export-llm", "llama", "-o", "", "-q"]) == 2
    assert "OutputFolderError: -o '': an empty path is not a folder" in capsys.readouterr().err
    assert _tree(work) == before


def test_out_that_is_the_source_or_the_tokenizer_folder_is_refused(tmp_path, source):
    """An earlier export's genai_config.json in SOURCE made it replaceable: the checkpoint went."""
    from tonnx_transformers.llm.folder import OutputFolderError

    shutil.copytree(source, tmp_path / "both")
    (tmp_path / "both" / "genai_config.json").write_text("{}")
    before = _tree(tmp_path / "both")
    with pytest.raises(OutputFolderError, match="is the folder the model or tokenizer is read from"):
        _export(tmp_path / "both", tmp_path / "both")
    with pytest.raises(OutputFolderError, match="is the folder the model or tokenizer is read from"):
        _export(source, tmp_path / "both", tokenizer=str(tmp_path / "both"))
    os.symlink(tmp_path / "both", tmp_path / "link")  # the same folder under another name
    with pytest.raises(OutputFolderError, match="is the folder the model or tokenizer is read from"):
        _export(tmp_path / "both", tmp_path / "link")
    assert _tree(tmp_path / "both") == before


def test_out_holding_the_source_and_the_users_files_keeps_them(tmp_path, source):
    """Exporting again into an earlier OUT: the new export's files replace the earlier ones;
    the earlier export's file this one does not write (a vocab.json) goes; notes.txt, a
    subfolder and the source checkpoint inside OUT stay."""
    out = tmp_path / "out"
    _export(source, out)
    (out / "notes.txt").write_text("mine")
    (out / "sub").mkdir()
    (out / "sub" / "data.txt").write_text("mine too")
    shutil.copytree(source, out / "llama")
    (out / "vocab.json").write_text("{}")  # as if an earlier export's tokenizer had one
    (out / "model.onnx").write_text("the earlier model")
    _export(out / "llama", out)
    assert _tree(out) == sorted([*EXPORTED, "notes.txt", "sub/data.txt",
                                 *(f"llama/{p}" for p in _tree(source))])
    assert (out / "notes.txt").read_text() == "mine" and (out / "sub" / "data.txt").read_text() == "mine too"
    assert (out / "model.onnx").stat().st_size > 1000
    assert os.listdir(tmp_path) == ["out"]  # no temporary left


def test_a_non_empty_folder_no_export_wrote_is_refused_naming_its_files(tmp_path, source):
    from tonnx_transformers.llm.folder import OutputFolderError

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(OutputFolderError, match="no export wrote .*it holds notes.txt"):
        _export(source, tmp_path / "out")
    assert os.listdir(tmp_path / "out") == ["notes.txt"]


def test_a_symlinked_out_is_written_through(tmp_path, source):
    """The link stays a link, its target folder receives the files (twice: a new one, then
    an earlier export's), and nothing hidden is left beside either."""
    (tmp_path / "target").mkdir()
    os.symlink(tmp_path / "target", tmp_path / "link")
    for _ in range(2):
        _export(source, tmp_path / "link")
        assert os.path.islink(tmp_path / "link")
        assert sorted(os.listdir(tmp_path / "target")) == EXPORTED
        assert sorted(os.listdir(tmp_path)) == ["link", "target"]


def test_an_output_name_of_up_to_255_bytes(tmp_path, source):
    """The temporary folder's name is short: OUT's name may take the 255 bytes a name has;
    a longer one is refused saying the limit (it said "cannot be examined" from 230 bytes)."""
    from tonnx_transformers.llm.folder import OutputFolderError

    out = tmp_path / ("é" * 127 + "x")  # 255 bytes in UTF-8
    _export(source, out)
    assert sorted(os.listdir(out)) == EXPORTED
    with pytest.raises(OutputFolderError, match="its name is 256 bytes; a file name holds at most 255"):
        _export(source, tmp_path / ("y" * 256))
    assert os.listdir(tmp_path) == [out.name]


def test_stale_temporaries_of_a_dead_process_are_removed(tmp_path, source):
    """A killed export's temporary folder (and an earlier version's ``.OUT.tmp-tonnx-...``
    symlink) beside OUT go at the next export; a live process's and the user's stay."""
    dead = _dead_pid()
    (tmp_path / f".tonnx-tmp-{dead}-0123abcd").mkdir()
    os.symlink(tmp_path, tmp_path / f".out.tmp-tonnx-{dead}-old-89abcdef")
    (tmp_path / f".tonnx-tmp-{os.getpid()}-0123abcd").mkdir()
    (tmp_path / ".tonnx-tmp-notes").mkdir()
    _export(source, tmp_path / "out")
    assert sorted(os.listdir(tmp_path)) == [f".tonnx-tmp-{os.getpid()}-0123abcd", ".tonnx-tmp-notes", "out"]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_sigterm_removes_the_temporary_folder(tmp_path, source):
    """SIGTERM while the folder is being written: exit 143, one line, nothing left beside OUT."""
    out = tmp_path / "out"
    run = subprocess.Popen([sys.executable, "-m", "tonnx", "export-llm", str(source), "-o", str(out), "-q"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not [p for p in os.listdir(tmp_path) if p.startswith(".")] and run.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert run.poll() is None, run.communicate()
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 128 + signal.SIGTERM, err
    assert "terminated (SIGTERM)" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_quiet_prints_nothing(tmp_path, source, capfd):
    """``-q``: no progress line, no summary, and none of transformers' progress bars
    ("Loading weights", shown when the greedy check loads the reference) or messages."""
    capfd.readouterr()
    assert main(["export-llm", str(source), "-o", str(tmp_path / "out"), "-q"]) == 0
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert sorted(os.listdir(tmp_path / "out")) == EXPORTED


def test_a_re_export_removes_the_earlier_exports_other_graphs_and_keeps_the_users(tmp_path):
    """A text model exported into an earlier vision-language or Whisper export's folder: the
    graphs and processor configs only that export wrote go (genai would not read them, and
    they would be mistaken for part of this model); the user's files stay."""
    from tonnx_transformers.llm import folder

    out = tmp_path / "out"
    out.mkdir()
    earlier = ["genai_config.json", "vision.onnx", "vision.onnx.data", "embedding.onnx", "model.onnx",
               "encoder.onnx", "decoder.onnx.data", "processor_config.json", "audio_processor_config.json"]
    for name in [*earlier, "notes.txt"]:
        (out / name).write_text("earlier")
    with folder.StagingFolder(str(out)) as staging:
        for name in ("model.onnx", "genai_config.json"):
            with open(os.path.join(staging.path, name), "w") as f:
                f.write("new")
        staging.publish()
    assert sorted(os.listdir(out)) == ["genai_config.json", "model.onnx", "notes.txt"]
    assert (out / "model.onnx").read_text() == "new" and (out / "notes.txt").read_text() == "earlier"
