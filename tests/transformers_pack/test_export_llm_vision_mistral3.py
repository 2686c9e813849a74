"""``tonnx export-llm`` for a vision-language model (issue 34 item 2): Mistral3 (Pixtral).

A tiny random Mistral3 folder (vlm_folders.py) is exported at fp32 and at int4 through the
command; onnxruntime-genai's multimodal processor reads a 56 x 84 PNG and a prompt with
``[IMG]``: it expands it to 2 rows of 3 ``[IMG]`` (ended by ``[IMG_BREAK]``, ``[IMG_END]``),
its pixel values must be transformers' Pixtral processor's and its greedy tokens
transformers' ``generate`` on the same image (int4: against the folder's int4 decoder
weights).
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

PROMPT = "[INST][IMG]Describe"
NEW_TOKENS = 12


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("mistral3")
    model = vlm_folders.save_mistral3_folder(root / "src")
    image = vlm_folders.image(56, 84)
    vlm_folders.write_png(root / "image.png", image)
    return root, model, image


@pytest.fixture(scope="module")
def exported(source):
    root = source[0]

    def folder(precision: str):
        if not (root / precision).exists():
            args = ["export-llm", str(root / "src"), "-o", str(root / precision), "--precision", precision, "-q"]
            assert main(args) == 0
        return root / precision

    return folder


@pytest.mark.parametrize("precision", ["fp32", "int4"])
def test_genai_greedy_tokens_equal_transformers(source, exported, precision):
    """One test per export, so that pytest-xdist's workers export each folder once."""
    root, model, image = source
    out = exported(precision)
    config = json.loads((out / "genai_config.json").read_text())["model"]
    assert config["type"] == "mistral3" and {"vision.onnx", "embedding.onnx"} <= set(os.listdir(out))
    assert (config["vision"]["patch_size"], config["vision"]["spatial_merge_size"]) == (14, 2)
    ids, got, pixels = vlm_folders.genai_run(og, out, root / "image.png", PROMPT, NEW_TOKENS)
    np.testing.assert_allclose(pixels, vlm_folders.pixtral_pixel_values(image), atol=1e-5)
    assert ids.count(model.config.image_token_id) == 6  # (56 / 28) x (84 / 28)
    reference = model
    if precision == "int4":
        from tonnx_transformers.llm.quantize import QuantPlan
        from tonnx_transformers.llm.quantized_reference import (
            quantized_reference,
            unquantized_weights,
        )
        from tonnx_transformers.llm.vision.qwen2_5_vl import DecoderStep

        reference = transformers.Mistral3ForConditionalGeneration.from_pretrained(root / "src").eval()
        step = DecoderStep(reference)
        quantized_reference(step, QuantPlan(bits=4, keep_float=unquantized_weights(step)))
    want = vlm_folders.mistral3_tokens(reference, ids, image, NEW_TOKENS)
    assert len(got) >= 8 and got == want
