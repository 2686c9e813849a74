"""A tiny random Whisper saved as a transformers folder (config, safetensors, tokenizer,
feature extractor), and greedy tokens from audio features in onnxruntime-genai and in
transformers: what ``tonnx export-llm`` reads for speech (llm/speech/).

2 encoder and 2 decoder layers, d_model 64, 80 mel bins, 1500 encoder positions (the 3000
frames onnxruntime-genai 0.18 feeds), 64 decoder positions, vocab 264: the 256 byte symbols
of a byte-level BPE and Whisper's special tokens. ``init_std`` 0.2: at Whisper's 0.02 the
random decoder repeats one token (20 equal tokens test little).
"""

from __future__ import annotations

import numpy as np
import torch
import transformers

SPECIALS = ["<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>"]
EOS, START = 256, 257
SIZES = dict(vocab_size=264, num_mel_bins=80, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, d_model=64,
             max_source_positions=1500, max_target_positions=64, init_std=0.2, pad_token_id=EOS,
             bos_token_id=EOS, eos_token_id=EOS, decoder_start_token_id=START, suppress_tokens=None,
             begin_suppress_tokens=None)


def tokenizer():
    """WhisperTokenizer over the 256 byte symbols (no merges), then <|endoftext|> (256) and
    Whisper's task tokens (257-260)."""
    from tokenizers import pre_tokenizers

    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = transformers.WhisperTokenizer(
        vocab={s: i for i, s in enumerate(symbols)}, merges=[], unk_token="<|endoftext|>",
        bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    tok.add_special_tokens({"additional_special_tokens": SPECIALS})
    return tok


def save_folder(folder, seed: int = 0, **overrides):
    """Writes the model, tokenizer and feature extractor into ``folder``; returns the model."""
    torch.manual_seed(seed)
    config = transformers.WhisperConfig(**{**SIZES, **overrides})
    model = transformers.WhisperForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    transformers.WhisperFeatureExtractor(feature_size=config.num_mel_bins).save_pretrained(folder)
    return model


def features(config, seed: int = 1) -> np.ndarray:
    """Seeded log-mel-like features ``[1, mels, 3000]``."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((1, config.num_mel_bins, 2 * config.max_source_positions)).astype(np.float32)


def genai_tokens(og, out, audio_features: np.ndarray, n: int) -> list[int]:
    """onnxruntime-genai's greedy tokens after the decoder start token, from ``audio_features``."""
    model = og.Model(str(out))
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=1 + n)
    generator = og.Generator(model, params)
    inputs = og.NamedTensors()
    inputs["audio_features"] = audio_features
    generator.set_inputs(inputs)
    generator.append_tokens(np.array([[START]], dtype=np.int32))
    got = []
    while not generator.is_done():
        generator.generate_next_token()
        got.append(int(generator.get_next_tokens()[0]))
    return got


def transformers_tokens(model, audio_features: np.ndarray, n: int) -> list[int]:
    """transformers' greedy ``generate`` after the start token, cut at eos as genai stops."""
    with torch.no_grad():
        out = model.generate(input_features=torch.from_numpy(audio_features),
                             decoder_input_ids=torch.tensor([[START]]), max_new_tokens=n, do_sample=False)
    want = out[0].tolist()
    want = want[1:] if want and want[0] == START else want
    return want[: want.index(EOS) + 1] if EOS in want else want
