"""Fixtures shared by the export-llm tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """(source folder, output folder, the model) of one ``tonnx export-llm`` run of
    llm_folders' tiny Llama, shared by the tests that only read the folder."""
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    import llm_folders

    from tonnx.cli import main

    root = tmp_path_factory.mktemp("llm")
    source, out = root / "llama", root / "llama-onnx"
    model = llm_folders.save_folder("llama", source)
    assert main(["export-llm", str(source), "-o", str(out), "-q"]) == 0
    return source, out, model
