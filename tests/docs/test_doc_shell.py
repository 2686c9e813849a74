"""Every ``tonnx ...`` command of docs/*.md runs, as written, and shows what the page shows.

- In a ```bash/```shell block, each line starting with ``tonnx `` runs (other lines, such as
  ``pip install``, are the reader's) and must exit 0.
- In a ```text/```console block, a ``$ tonnx ...`` line runs and the lines after it, up to
  the next ``$`` line, are its output: compared line by line, where a line ``...`` stands
  for any number of lines and ``...`` inside a line for any text (the parts that vary:
  versions, random weights).
- A ```python block whose first line is ``# NAME.py`` is also the file NAME.py the commands
  use; every page's commands run in order in one temporary folder holding those files.

Commands run in-process (``tonnx.cli.main``), as fast as a test allows; the subprocess form
is tested by tests/cli. ``RUN_ELSEWHERE`` names the few commands a dedicated test runs.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from tonnx.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs"
REPO = DOCS.parent
FENCE = re.compile(r"^```(?P<lang>\w*)[ \t]*\n(?P<body>.*?)^```", re.S | re.M)
#: commands a dedicated test runs (slow), with that test
RUN_ELSEWHERE = {
    "tonnx demo": "tests/cli/test_cli.py::test_demo",
    # needs the folder the page's python block writes, and an export
    "tonnx export-llm tiny-llama -o tiny-llama-onnx": "tests/transformers_pack/test_export_llm.py::test_folder_contents",
}
#: where a page's commands run when they name files of the repository (not a temporary folder)
CWD = {"writing-a-pack.md": REPO / "contrib_packs"}


def commands(text: str) -> list[tuple[str, list[str] | None]]:
    """(command, expected output lines or None) in the order of the page."""
    found = []
    for m in FENCE.finditer(text):
        lang, lines = m.group("lang"), m.group("body").splitlines()
        if lang in ("bash", "shell", "sh"):
            for line in lines:
                line = re.split(r"\s+#", line)[0].strip()
                if line.startswith("tonnx "):
                    found.append((line, None))
        elif lang in ("text", "console"):
            shown = None
            for line in lines:
                if line.startswith("$ "):
                    shown = []
                    found.append((line[2:].strip(), shown))
                elif shown is not None:
                    shown.append(line.rstrip())
    return found


def files(text: str) -> dict[str, str]:
    """``{name: code}`` of the python blocks that are files (first line ``# NAME.py``)."""
    out = {}
    for m in FENCE.finditer(text):
        first, _, rest = m.group("body").partition("\n")
        name = re.fullmatch(r"#\s*(\w+\.py)\s*", first)
        if m.group("lang") == "python" and name:
            out[name.group(1)] = m.group("body")
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` with ``...`` lines (any lines) and ``...`` in lines (any text)."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(matches(rest, actual[i:]) for i in range(len(actual) + 1))
    pattern = ".*".join(re.escape(part) for part in head.split("..."))
    return bool(actual) and re.fullmatch(pattern, actual[0]) is not None and matches(rest, actual[1:])


def run(command: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(shlex.split(command)[1:])
        except SystemExit as e:  # argparse's own exits
            code = e.code
    return code, out.getvalue(), err.getvalue()


EVERY_FILE = {name: code for p in DOCS.glob("*.md") for name, code in files(p.read_text()).items()}
PAGES = sorted(p.name for p in DOCS.glob("*.md") if commands(p.read_text()))


@pytest.mark.parametrize("page", PAGES)
def test_shell_examples_run_as_shown(page, tmp_path, monkeypatch):
    monkeypatch.chdir(CWD.get(page, tmp_path))
    for name, code in EVERY_FILE.items():
        (tmp_path / name).write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    for command, expected in commands((DOCS / page).read_text()):
        if command in RUN_ELSEWHERE:
            continue
        code, out, err = run(command)
        assert code == 0, f"docs/{page}: `{command}` exited {code}:\n{err}"
        if expected:
            lines = [line.rstrip() for line in out.rstrip("\n").splitlines()]
            while expected and not expected[-1]:
                expected = expected[:-1]
            assert matches(expected, lines), (
                f"docs/{page}: `{command}` printed\n" + "\n".join(lines) + "\nbut the page shows\n"
                + "\n".join(expected)
            )


def test_the_commands_and_files_are_found():
    every = {p.name: commands(p.read_text()) for p in DOCS.glob("*.md")}
    assert {"cli.md", "quickstart.md"} <= {page for page, found in every.items() if found}
    shown = [c for found in every.values() for c, expected in found if expected]
    assert "tonnx show model.onnx" in shown
    assert "mymodels.py" in EVERY_FILE
    assert all(any(c == skipped for found in every.values() for c, _ in found) for skipped in RUN_ELSEWHERE)


def test_output_patterns():
    assert matches(["a", "...", "d ... f"], ["a", "b", "c", "d e f"])
    assert matches(["a", "..."], ["a"])
    assert not matches(["a", "c"], ["a", "b"])
    assert not matches(["x: ...[8]"], ["x: FLOAT[9]"])


def test_quickstart_op_without_a_converter_has_none_and_its_converter_is_exact(capsys):
    """The page's op must really lack a converter (CELU had one), and its converter be exact."""
    import onnxruntime
    import torch

    text = (DOCS / "quickstart.md").read_text()
    section = text[text.index("## An op without a converter"):]
    code = next(m.group("body") for m in FENCE.finditer(section) if m.group("lang") == "python")
    namespace = {}
    exec(compile("import torch, tonnx\n" + code, "docs/quickstart.md", "exec"), namespace)
    assert "No converter for 1 op(s) of the graph" in capsys.readouterr().out  # the export failed
    got = onnxruntime.InferenceSession(namespace["onx"].SerializeToString()).run(
        None, {"x": namespace["args"][0].numpy()})[0]
    torch.testing.assert_close(torch.from_numpy(got), namespace["model"](*namespace["args"]))
