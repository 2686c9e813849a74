"""Tiny random vision-language models saved as transformers folders, an image, and
transformers' answer: Qwen2.5-VL and Mistral3.

Qwen2.5-VL: vision 2 blocks (one windowed, one full), hidden 32; text 2 layers, hidden 64,
vocab 264 (the 256 byte symbols, then the vision tokens). Mistral3: Pixtral 2 layers, hidden
32; Mistral text 2 layers, hidden 64. ``preprocessor_config.json`` is written as the image
processor's ``save_pretrained`` writes it (the README environment has neither PIL nor
torchvision, which transformers' image processors need), and :func:`pixel_values` /
:func:`pixtral_pixel_values` compute what those processors give for an image whose size
needs no resizing (sides multiples of 28, within the size limits): rescale, normalize, and
for Qwen patches in 2x2 units.
"""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import torch
import transformers

VISION_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
START, END, IMAGE, VIDEO = 256, 257, 258, 259
MEAN = [0.48145466, 0.4578275, 0.40821073]
STD = [0.26862954, 0.26130258, 0.27577711]
PREPROCESSOR = {
    "image_processor_type": "Qwen2VLImageProcessor", "do_resize": True, "resample": 3, "do_rescale": True,
    "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": MEAN, "image_std": STD,
    "do_convert_rgb": True, "min_pixels": 56 * 56, "max_pixels": 28 * 28 * 1280, "patch_size": 14,
    "temporal_patch_size": 2, "merge_size": 2,
}


def qwen2_5_vl_config():
    ids = dict(bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return transformers.Qwen2_5_VLConfig(
        text_config=dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         intermediate_size=128, vocab_size=264, max_position_embeddings=512,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
                         **ids),
        vision_config=dict(depth=2, hidden_size=32, num_heads=2, intermediate_size=64, out_hidden_size=64,
                           patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                           fullatt_block_indexes=[1]),
        image_token_id=IMAGE, video_token_id=VIDEO, vision_start_token_id=START, vision_end_token_id=END, **ids)


def tokenizer(special=VISION_TOKENS):
    """llm_folders' byte-level BPE with four special tokens added (ids 256..259)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE({s: i for i, s in enumerate(symbols)}, []))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in special])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=symbols[1], eos_token=symbols[2])


def save_folder(folder, seed: int = 0):
    """Writes the model, the tokenizer and preprocessor_config.json; returns the model."""
    torch.manual_seed(seed)
    model = transformers.Qwen2_5_VLForConditionalGeneration(qwen2_5_vl_config()).eval()
    model.save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR, indent=2))
    return model


def image(height: int = 112, width: int = 84, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def write_png(path, rgb: np.ndarray) -> None:
    """An 8-bit RGB PNG (no PIL in the README environment)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[i].tobytes() for i in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def pixel_values(rgb: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """(pixel_values, [t, h, w]) as Qwen2VLImageProcessor gives them for ``rgb`` (no resize)."""
    p, t, m = 14, 2, 2
    x = ((rgb.astype(np.float32) / 255 - np.float32(MEAN)) / np.float32(STD)).transpose(2, 0, 1)
    c, height, width = x.shape
    gh, gw = height // p, width // p
    patches = np.tile(x[None], (t, 1, 1, 1)).reshape(1, t, c, gh // m, m, p, gw // m, m, p)
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8).reshape(gh * gw, c * t * p * p)
    return np.ascontiguousarray(patches), [1, gh, gw]


def transformers_tokens(model, input_ids: list[int], rgb: np.ndarray, n: int) -> list[int]:
    """transformers' ``generate(do_sample=False)`` on the prompt and the image, cut at eos."""
    pixels, grid = pixel_values(rgb)
    ids = torch.tensor([input_ids])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=torch.from_numpy(pixels),
                             image_grid_thw=torch.tensor([grid]), mm_token_type_ids=(ids == IMAGE).int(),
                             max_new_tokens=n, do_sample=False, pad_token_id=0)
    want = out[0, len(input_ids):].tolist()
    eos = model.generation_config.eos_token_id
    return want[: want.index(eos) + 1] if eos in want else want


def genai_run(og, out, image_path, prompt: str, n: int) -> tuple[list[int], list[int], np.ndarray]:
    """(prompt ids, generated tokens, pixel_values) of onnxruntime-genai's multimodal processor
    and generator on the folder ``out``."""
    model = og.Model(str(out))
    inputs = model.create_multimodal_processor()(prompt, images=og.Images.open(str(image_path)))
    ids = [int(i) for i in inputs["input_ids"].as_numpy()[0]]
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + n, do_sample=False)
    generator = og.Generator(model, params)
    generator.set_inputs(inputs)
    got = []
    while not generator.is_done():
        generator.generate_next_token()
        got.append(int(generator.get_next_tokens()[0]))
    return ids, got, inputs["pixel_values"].as_numpy()


MISTRAL3_TOKENS = ["[IMG]", "[IMG_BREAK]", "[IMG_END]", "[INST]"]
PIXTRAL_PREPROCESSOR = {
    "image_processor_type": "PixtralImageProcessor", "do_resize": True, "size": {"longest_edge": 1540},
    "patch_size": {"height": 14, "width": 14}, "resample": 3, "do_rescale": True, "rescale_factor": 1 / 255,
    "do_normalize": True, "image_mean": MEAN, "image_std": STD, "do_convert_rgb": True,
}


def save_mistral3_folder(folder, seed: int = 0):
    """A Mistral3 folder ([IMG] is id 256); initializer_range 0.3: at transformers' default
    the tiny model repeats one token after the image."""
    ids = dict(bos_token_id=1, eos_token_id=2, pad_token_id=0)
    config = transformers.Mistral3Config(
        text_config=dict(model_type="mistral", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=128, vocab_size=264, max_position_embeddings=512,
                         head_dim=16, initializer_range=0.3, **ids),
        vision_config=dict(model_type="pixtral", hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, patch_size=14, image_size=224, head_dim=16),
        image_token_id=256, spatial_merge_size=2, vision_feature_layer=-1, initializer_range=0.3, **ids)
    torch.manual_seed(seed)
    model = transformers.Mistral3ForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    tokenizer(MISTRAL3_TOKENS).save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps(PIXTRAL_PREPROCESSOR, indent=2))
    return model


def pixtral_pixel_values(rgb: np.ndarray) -> np.ndarray:
    """PixtralImageProcessor's ``pixel_values [1, 3, H, W]`` for ``rgb`` (no resize)."""
    x = (rgb.astype(np.float32) / 255 - np.float32(MEAN)) / np.float32(STD)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def mistral3_tokens(model, input_ids: list[int], rgb: np.ndarray, n: int) -> list[int]:
    """transformers' ``generate(do_sample=False)`` on the prompt and the image, cut at eos."""
    ids = torch.tensor([input_ids])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                             pixel_values=torch.from_numpy(pixtral_pixel_values(rgb)),
                             image_sizes=torch.tensor([list(rgb.shape[:2])]), max_new_tokens=n, do_sample=False,
                             pad_token_id=0)
    want = out[0, len(input_ids):].tolist()
    eos = model.generation_config.eos_token_id
    return want[: want.index(eos) + 1] if eos in want else want
