"""``tonnx export-llm`` for a vision-language model (issue 34 item 2): Qwen2.5-VL.

A tiny random Qwen2.5-VL folder (vlm_folders.py) is exported once at fp32 and once at int4
through the command; onnxruntime-genai's multimodal processor reads a PNG and a prompt from
each folder and generates greedily: its tokens must equal transformers' ``generate`` on the
same image (int4: transformers holding the folder's quantized decoder weights, as the text
path's check does). The image pipeline genai runs is checked against transformers' image
processor's pixel values.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tonnx.cli import main

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
og = pytest.importorskip("onnxruntime_genai")

import vlm_folders  # noqa: E402

PROMPT = "<|vision_start|><|image_pad|><|vision_end|>Describe"
NEW_TOKENS = 12


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("vlm")
    model = vlm_folders.save_folder(root / "src")
    image = vlm_folders.image()
    vlm_folders.write_png(root / "image.png", image)
    return root, model, image


@pytest.fixture(scope="module")
def exported(source):
    """The folder of a precision, exported through the command on first use."""
    root = source[0]

    def folder(precision: str):
        if not (root / precision).exists():
            args = ["export-llm", str(root / "src"), "-o", str(root / precision), "--precision", precision, "-q"]
            assert main(args) == 0
        return root / precision

    return folder


def test_fp32_folder_runs_in_genai_as_transformers(source, exported):
    """The folder's files and configs; genai's pixel values and greedy tokens (one test per
    export, so that pytest-xdist's workers export each folder once)."""
    root, model, image = source
    out = exported("fp32")
    assert sorted(os.listdir(out)) == [
        "embedding.onnx", "embedding.onnx.data", "genai_config.json", "model.onnx", "model.onnx.data",
        "processor_config.json", "tokenizer.json", "tokenizer_config.json", "vision.onnx", "vision.onnx.data"]
    config = json.loads((out / "genai_config.json").read_text())["model"]
    assert config["type"] == "qwen2_5_vl"
    assert (config["image_token_id"], config["vision_start_token_id"]) == (vlm_folders.IMAGE, vlm_folders.START)
    assert config["vision"]["inputs"] == {"pixel_values": "pixel_values", "image_grid_thw": "image_grid_thw"}
    assert config["embedding"]["outputs"] == {"inputs_embeds": "inputs_embeds"}
    assert set(config["decoder"]["inputs"]) == {"inputs_embeds", "attention_mask", "position_ids",
                                                "past_key_names", "past_value_names"}
    ids, got, pixels = vlm_folders.genai_run(og, out, root / "image.png", PROMPT, NEW_TOKENS)
    np.testing.assert_allclose(pixels, vlm_folders.pixel_values(image)[0], atol=1e-5)
    assert ids.count(vlm_folders.IMAGE) == 12  # 112 x 84 pixels: 8 x 6 patches, 4 x 3 tokens
    # the tiny model generates the image token second: a plain token from then on
    want = vlm_folders.transformers_tokens(model, ids, image, NEW_TOKENS)
    assert len(got) >= 8 and got == want


def test_int4_folder_runs_in_genai_as_transformers_with_its_weights(source, exported):
    root, _, image = source
    ids, got = vlm_folders.genai_run(og, exported("int4"), root / "image.png", PROMPT, NEW_TOKENS)[:2]
    reference = _with_int4_decoder(transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(root / "src"))
    want = vlm_folders.transformers_tokens(reference, ids, image, NEW_TOKENS)
    assert len(got) >= 8 and got == want


def _with_int4_decoder(model):
    """``model`` with its decoder's linear layers as the int4 folder holds them (the vision
    tower stays float32, as in the folder)."""
    from tonnx_transformers.llm.quantize import QuantPlan
    from tonnx_transformers.llm.quantized_reference import quantized_reference, unquantized_weights
    from tonnx_transformers.llm.vision.qwen2_5_vl import DecoderStep

    step = DecoderStep(model.eval())
    quantized_reference(step, QuantPlan(bits=4, keep_float=unquantized_weights(step)))
    return model


def test_a_vision_language_type_not_written_is_refused_by_name(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.json").write_text(json.dumps({"model_type": "qwen3_vl"}))
    assert main(["export-llm", str(tmp_path / "src"), "-o", str(tmp_path / "out"), "-q"]) == 1  # UnsupportedError, as for a text model export-llm refuses
    err = capsys.readouterr().err
    assert "qwen3_vl" in err and "qwen2_5_vl" in err
    assert not (tmp_path / "out").exists()
