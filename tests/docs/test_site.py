"""The documentation site builds with warnings as errors (mkdocs --strict), API pages included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_site_builds_strict(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("to_onnx", "export_program", "onnx_custom_backend", "check_model"):
        assert name in api
    assert "Exports <code>model</code>" in api or "Exports model" in api  # a docstring rendered
    assert (tmp_path / "site" / "cli" / "index.html").exists()


def test_every_page_is_in_the_nav():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = {page for entry in config["nav"] for page in entry.values()}
    assert in_nav == {p.name for p in (ROOT / "docs").glob("*.md")}
