"""Ctrl-C and SIGTERM in the middle of ``tonnx export``: one line (exit 130) or the process
ended by the signal, no traceback, and no temporary file left beside the model."""

from __future__ import annotations

import os
import signal

from .test_cli import TARGETS, tonnx


def _main(argv: list[str]):
    """``tonnx.cli.main``'s exit code, or what escaped it (not the test session's Ctrl-C)."""
    from tonnx.cli import main

    try:
        return main(argv)
    except KeyboardInterrupt:
        return "KeyboardInterrupt escaped main()"


def test_ctrl_c_prints_one_line_exits_130_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    """Ctrl-C once the temporary model file is written (KeyboardInterrupt raised there)."""
    from tonnx.pipeline.write import _file_writer

    original, seen = _file_writer.write_inline, []

    def write_then_interrupt(*args, **kwargs):
        original(*args, **kwargs)
        seen.extend(os.listdir(tmp_path))
        raise KeyboardInterrupt

    monkeypatch.setattr(_file_writer, "write_inline", write_then_interrupt)
    assert _main(["export", f"{TARGETS}:mlp", "-o", str(tmp_path / "m.onnx"), "-q"]) == 130
    assert capsys.readouterr().err == "tonnx export: interrupted\n"
    assert len(seen) == 1 and ".tmp-tonnx-" in seen[0]  # interrupted while it existed
    assert os.listdir(tmp_path) == []


def test_sigterm_leaves_no_temporary(tmp_path):
    r = tonnx("export", f"{TARGETS}:terminated", "-o", str(tmp_path / "m.onnx"), "-q")
    assert r.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM), (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert os.listdir(tmp_path) == []


def test_ctrl_c_in_any_command_returns_130(capsys, monkeypatch):
    """main() handles it once, for every command (the packs' export-llm included)."""
    from tonnx.tools.cli import _packs

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(_packs, "run", interrupted)
    assert _main(["packs"]) == 130
    assert capsys.readouterr().err == "tonnx packs: interrupted\n"
