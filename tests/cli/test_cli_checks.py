"""``tonnx export --verify`` compares what ``tonnx.testing.check_model`` compares, ``tonnx
show`` refuses what is not a model, and ``--opset`` takes the range ``to_onnx`` takes."""

from __future__ import annotations

import os
import re

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(HERE, "cli_targets.py")
DOCS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs")


def test_verify_compares_the_updated_buffer(tmp_path, capsys):
    """The user guide's Counter: its model has count.updated after its output ("torch gives 1
    outputs, onnxruntime 2" before)."""
    from tonnx.cli import main

    assert main(["export", f"{TARGETS}:counter", "-o", str(tmp_path / "c.onnx"), "--verify", "-q"]) == 0
    out = capsys.readouterr().out
    assert "verify (onnxruntime vs torch" in out and ": ok" in out
    assert "  count.updated: float32[1] max abs diff 0 (ok)" in out


@pytest.mark.parametrize("content, why", [(b"", "an empty file"), (b"x\n", "no IR version")])
def test_show_refuses_what_is_not_a_model(tmp_path, capsys, content, why):
    from tonnx.cli import main

    path = tmp_path / "m.onnx"
    path.write_bytes(content)
    assert main(["show", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"tonnx show: NotAnOnnxModelError: {str(path)!r} is not an ONNX model ({why})" in captured.err


def _opset_choices(command: str) -> list[int]:
    from tonnx.cli import _parser

    sub = next(a for a in _parser()._actions if a.dest == "command")
    option = next(a for a in sub.choices[command]._actions if "--opset" in a.option_strings)
    return list(option.choices)


def test_one_opset_range_for_to_onnx_the_cli_and_the_docs():
    import tonnx
    from tonnx._opsets import MAX_OPSET, MIN_OPSET, SUPPORTED_OPSETS
    from tonnx.builder import SUPPORTED_OPSETS as BUILDER_OPSETS
    from tonnx.pipeline._arguments import opsets

    assert list(SUPPORTED_OPSETS) == list(range(MIN_OPSET, MAX_OPSET + 1)) == list(BUILDER_OPSETS)
    for command in ("export", "explain"):
        assert _opset_choices(command) == list(SUPPORTED_OPSETS)
    assert opsets(MIN_OPSET) and opsets(MAX_OPSET)
    for outside in (MIN_OPSET - 1, MAX_OPSET + 1):
        with pytest.raises(tonnx.TonnxError, match=f"choose {MIN_OPSET} to {MAX_OPSET}"):
            opsets(outside)
    ranges = set()
    for name in ("cli.md", "user-guide.md", "quickstart.md"):
        with open(os.path.join(DOCS, name)) as f:
            ranges |= set(re.findall(r"\b(1[0-9]) to ([0-9]+)\b", f.read()))
    ranges |= set(re.findall(r"\b(1[0-9]) to ([0-9]+)\b", tonnx.to_onnx.__doc__))
    assert ranges == {(str(MIN_OPSET), str(MAX_OPSET))}
