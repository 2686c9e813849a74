"""``tonnx export-llm`` of Whisper: an encoder and decoder folder onnxruntime-genai runs from
audio features (issue 34 item 1).

A tiny random Whisper (whisper_folders.py) is exported once in fp32 through the command and
once in int4 through ``export_llm``; onnxruntime-genai opens each folder and its 20 greedy
tokens from seeded features must equal transformers' ``generate`` (int4: transformers
holding the folder's quantized decoder weights). Other encoder-decoders are refused before
anything is read or written.
"""

from __future__ import annotations

import json
import os
import wave

import numpy as np
import onnx
import pytest

from tonnx.cli import main

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import whisper_folders  # noqa: E402

TOKENS = 20


def _genai():
    return pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whisper") / "tiny-whisper"
    return folder, whisper_folders.save_folder(folder)


@pytest.fixture(scope="module")
def fp32(source):
    folder, _ = source
    out = folder.parent / "fp32"
    assert main(["export-llm", str(folder), "-o", str(out), "-q"]) == 0
    return out


@pytest.fixture(scope="module")
def int4(source):
    from tonnx_transformers import export_llm

    folder, _ = source
    result = export_llm(folder, folder.parent / "int4", precision="int4")
    assert "int4 decoder weights" in result.check.line()
    return folder.parent / "int4"


def _ops(path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in onnx.load(str(path), load_external_data=False).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def test_folder_holds_both_graphs_and_the_processor_files(fp32, source):
    _, model = source
    assert sorted(os.listdir(fp32)) == [
        "audio_processor_config.json", "decoder.onnx", "decoder.onnx.data", "encoder.onnx", "encoder.onnx.data",
        "genai_config.json", "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json"]
    config = json.loads((fp32 / "genai_config.json").read_text())["model"]
    assert config["type"] == "whisper" and config["context_length"] == model.config.max_target_positions
    assert config["decoder"]["inputs"]["cross_past_key_names"] == "past_key_cross_%d"
    assert config["encoder"]["outputs"]["cross_present_key_names"] == "present_key_cross_%d"
    assert (config["decoder"]["num_hidden_layers"], config["decoder"]["head_size"]) == (2, 16)
    assert config["eos_token_id"] == whisper_folders.EOS


def test_genai_tokens_from_features_equal_transformers(fp32, source):
    og = _genai()
    _, model = source
    features = whisper_folders.features(model.config)
    got = whisper_folders.genai_tokens(og, fp32, features, TOKENS)
    want = whisper_folders.transformers_tokens(model, features, TOKENS)
    assert len(set(got)) > 2 and got == want


def test_int4_decoder_tokens_equal_transformers_with_its_weights(int4, source):
    og = _genai()
    from tonnx_transformers.llm.quantize import QuantPlan
    from tonnx_transformers.llm.speech.whisper_export import quantized_decoder

    folder, model = source
    # 2 layers x (self q, k, v, out; cross q, out; fc1, fc2) + the head; the encoder float32
    assert _ops(int4 / "decoder.onnx").get("MatMulNBits") == 17
    assert "MatMulNBits" not in _ops(int4 / "encoder.onnx")
    plan = QuantPlan(bits=4)
    if "GatherBlockQuantized" in _ops(int4 / "decoder.onnx"):  # the tied embedding reads the head's int4 rows
        plan.gathered = {"proj_out.weight"}
    reference = quantized_decoder(transformers.WhisperForConditionalGeneration.from_pretrained(folder).eval(), plan)
    features = whisper_folders.features(model.config)
    got = whisper_folders.genai_tokens(og, int4, features, TOKENS)
    assert got == whisper_folders.transformers_tokens(reference, features, TOKENS)
    assert got != whisper_folders.transformers_tokens(model, features, TOKENS)  # int4 moved them


def test_genai_processor_computes_transformers_features(fp32, source, tmp_path):
    og = _genai()
    folder, _ = source
    rate = 16000
    time = np.arange(rate) / rate
    samples = (12000 * np.sin(2 * np.pi * 440 * time) * np.linspace(0, 1, rate)).astype(np.int16)
    with wave.open(str(tmp_path / "a.wav"), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(rate)
        f.writeframes(samples.tobytes())
    processor = og.Model(str(fp32)).create_multimodal_processor()
    inputs = processor("".join(whisper_folders.SPECIALS), audios=og.Audios.open(str(tmp_path / "a.wav")))
    got = inputs["audio_features"].as_numpy()
    assert inputs["input_ids"].as_numpy().tolist() == [[257, 258, 259, 260]]
    extractor = transformers.WhisperFeatureExtractor.from_pretrained(folder)
    want = extractor(samples.astype(np.float32) / 32768, sampling_rate=rate, return_tensors="np").input_features
    assert got.shape == want.shape == (1, 80, 3000)
    # onnxruntime-genai's STFT differs at the audio's first 2 and last 2 frames (its padding)
    np.testing.assert_allclose(got[..., 2:98], want[..., 2:98], atol=1e-4)
    np.testing.assert_allclose(got[..., 102:], want[..., 102:], atol=1e-4)


def test_other_encoder_decoders_are_refused_before_any_work(tmp_path):
    from tonnx import UnsupportedError
    from tonnx_transformers import export_llm

    transformers.BartConfig(d_model=16, encoder_layers=1, decoder_layers=1).save_pretrained(tmp_path / "bart")
    with pytest.raises(UnsupportedError, match="'bart' is an encoder-decoder"):
        export_llm(tmp_path / "bart", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_fp16_whisper_is_refused(source, tmp_path):
    from tonnx import UnsupportedError
    from tonnx_transformers import export_llm

    folder, _ = source
    with pytest.raises(UnsupportedError, match="fp32, int8, int4 Whisper folders"):
        export_llm(folder, tmp_path / "out", precision="fp16")
    assert not (tmp_path / "out").exists()
