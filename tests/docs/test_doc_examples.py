"""Every ```python block of docs/*.md runs, in order, one namespace per page.

A block that must not run (a fragment of a larger file) is preceded by ``<!-- no-run -->``
on the line above its fence; the count of such blocks is pinned so skipping stays rare.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"(?P<marker><!--\s*no-run\s*-->[ \t]*\n)?^```python[ \t]*\n(?P<code>.*?)^```", re.S | re.M)


def blocks(path: Path) -> list[tuple[int, str, bool]]:
    """(line of the fence, code, runs) for each python block of a page."""
    text = path.read_text(encoding="utf-8")
    found = []
    for m in BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("code"))
        found.append((line, m.group("code"), m.group("marker") is None))
    return found


PAGES = sorted(p.name for p in DOCS.glob("*.md") if any(run for _, _, run in blocks(p)))


@pytest.mark.parametrize("page", PAGES)
def test_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples write files: keep them out of the tree
    namespace = {"__name__": f"docs_{page[:-3].replace('-', '_')}"}
    for line, code, runs in blocks(DOCS / page):
        if runs:
            exec(compile(code, f"docs/{page}:{line}", "exec"), namespace)


def test_blocks_are_found_and_skips_are_few():
    every = {p.name: blocks(p) for p in DOCS.glob("*.md")}
    assert sum(len(b) for b in every.values()) >= 8
    skipped = {page: sum(not run for _, _, run in b) for page, b in every.items()}
    assert sum(skipped.values()) <= 5, skipped
