"""``tonnx export-llm``: what is wrong with SOURCE or its tokenizer is a source error (exit 2)
that names the file, written before anything is published (issue 31, items 9 and 10)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tonnx.cli import main

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import llm_folders  # noqa: E402


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    folder = tmp_path_factory.mktemp("src") / "llama"
    llm_folders.save_folder("llama", folder)
    return folder


def _copy(source, into):
    shutil.copytree(source, into)
    return into


def test_a_truncated_safetensors_file_is_a_source_error(tmp_path, source, capsys):
    src = _copy(source, tmp_path / "src")
    weights = src / "model.safetensors"
    with open(weights, "r+b") as f:
        f.truncate(weights.stat().st_size // 2)
    assert main(["export-llm", str(src), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "SourceError" in err and "model.safetensors' cannot be read as safetensors" in err
    assert "truncated" in err and "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["src"]


def test_a_config_contradicting_the_weights_names_the_tensor(tmp_path, source, capsys):
    src = _copy(source, tmp_path / "src")
    config = json.loads((src / "config.json").read_text())
    config["hidden_size"] = 32
    (src / "config.json").write_text(json.dumps(config))
    assert main(["export-llm", str(src), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert ("SourceError: " in err and "config.json and the weights disagree: 'model.embed_tokens.weight' "
            "is (256, 32) from config.json but (256, 64) in model.safetensors" in err), err
    assert sorted(os.listdir(tmp_path)) == ["src"]


def test_a_tokenizer_option_that_is_no_folder_is_refused(tmp_path, source, capsys):
    assert main(["export-llm", str(source), "-o", str(tmp_path / "out"), "-q",
                 "--tokenizer", str(tmp_path / "nosuchdir")]) == 2
    assert "TokenizerError: --tokenizer" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_a_source_without_tokenizer_files_is_said(tmp_path, source, capsys):
    """The folder is written (it runs on token ids) and a warning says it has no tokenizer;
    ``--no-tokenizer`` says none is wanted: no warning."""
    src = _copy(source, tmp_path / "src")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        os.remove(src / name)
    assert main(["export-llm", str(src), "-o", str(tmp_path / "out"), "-q", "--no-verify"]) == 0
    assert "warning: no tokenizer files in" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path / "out")) == ["genai_config.json", "model.onnx", "model.onnx.data"]
    assert main(["export-llm", str(source), "-o", str(tmp_path / "none"), "-q", "--no-verify",
                 "--no-tokenizer"]) == 0
    assert capsys.readouterr().err == ""
    assert sorted(os.listdir(tmp_path / "none")) == ["genai_config.json", "model.onnx", "model.onnx.data"]


def test_a_tokenizer_genai_cannot_read_is_refused(tmp_path, source, capsys):
    """A WordLevel tokenizer: transformers reads it, onnxruntime-genai does not."""
    pytest.importorskip("onnxruntime_genai")
    from tokenizers import Tokenizer, models, pre_tokenizers

    word_level = Tokenizer(models.WordLevel({"hello": 0, "world": 1, "[UNK]": 2}, unk_token="[UNK]"))
    word_level.pre_tokenizer = pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=word_level, unk_token="[UNK]").save_pretrained(
        tmp_path / "words")
    assert main(["export-llm", str(source), "-o", str(tmp_path / "out"), "-q", "--no-verify",
                 "--tokenizer", str(tmp_path / "words")]) == 2
    err = capsys.readouterr().err
    assert "TokenizerError: the tokenizer files of" in err and "do not load in onnxruntime-genai" in err
    assert sorted(os.listdir(tmp_path)) == ["words"]


def test_the_copied_tokenizer_round_trips_in_genai(tmp_path, source):
    """The check itself: the source's byte-level BPE passes; a tokenizer that loses a
    character is told apart (its vocabulary without "H": genai drops it)."""
    pytest.importorskip("onnxruntime_genai")
    from tonnx_transformers.llm.tokenizer_check import TokenizerError, check_genai_tokenizer

    folder = _copy(source, tmp_path / "folder")
    config = {"model": {"type": "llama", "vocab_size": 256, "context_length": 256}}
    (folder / "genai_config.json").write_text(json.dumps(config))
    check_genai_tokenizer(str(folder), ["tokenizer.json"], str(source))
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    del tokenizer["model"]["vocab"]["H"]
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    with pytest.raises(TokenizerError, match="encodes 'Hello, world! 123' and decodes 'ello, world! 123'"):
        check_genai_tokenizer(str(folder), ["tokenizer.json"], str(source))
