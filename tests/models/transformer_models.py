"""Tiny random-weight ``transformers`` models, built from configs (nothing is downloaded).

Each builder returns ``(module, args)``: the module wraps the transformers model so the
exported forward takes plain tensors, runs without KV cache (``use_cache=False``) and returns
plain tensors (``logits`` or ``last_hidden_state``); ``args`` are example inputs.
"""

from __future__ import annotations

import torch
from torch import nn

ATTN = "sdpa"


def _seeded(seed: int) -> torch.Generator:
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed + 1)


def _ids(gen: torch.Generator, vocab: int, batch: int, seq: int) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=gen, dtype=torch.int64)


def _mask(batch: int, seq: int) -> torch.Tensor:
    """An attention mask with some left padding in the last row (when there are 2+ rows)."""
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if batch > 1 and seq > 2:
        mask[-1, :2] = 0
    return mask


class CausalLMLogits(nn.Module):
    """``input_ids, attention_mask -> logits`` of a ``*ForCausalLM`` without cache."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        return out.logits


class EncoderHidden(nn.Module):
    """``input_ids, attention_mask -> last_hidden_state`` (BERT-like encoders)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state


class Seq2SeqLogits(nn.Module):
    """``input_ids, attention_mask, decoder_input_ids -> logits`` (T5)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, decoder_input_ids) -> torch.Tensor:
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            use_cache=False,
        )
        return out.logits


class ImageLogits(nn.Module):
    """``pixel_values -> logits`` (ViTForImageClassification)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values).logits


class SpeechLogits(nn.Module):
    """``input_features, decoder_input_ids -> logits`` (WhisperForConditionalGeneration)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_features, decoder_input_ids) -> torch.Tensor:
        out = self.model(
            input_features=input_features, decoder_input_ids=decoder_input_ids, use_cache=False
        )
        return out.logits


def _decoder_kwargs() -> dict:
    return dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
        max_position_embeddings=256,
        attn_implementation=ATTN,
    )


def _causal_lm(config, seed: int, batch: int, seq: int):
    import transformers

    gen = _seeded(seed)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    args = (_ids(gen, config.vocab_size, batch, seq), _mask(batch, seq))
    return CausalLMLogits(model).eval(), args


def llama(seed: int = 0, batch: int = 2, seq: int = 12):
    import transformers

    return _causal_lm(transformers.LlamaConfig(**_decoder_kwargs()), seed, batch, seq)


def mistral(seed: int = 0, batch: int = 2, seq: int = 12):
    import transformers

    # a window shorter than the sequence, so the sliding-window mask matters
    config = transformers.MistralConfig(**_decoder_kwargs(), sliding_window=8)
    return _causal_lm(config, seed, batch, seq)


def qwen2(seed: int = 0, batch: int = 2, seq: int = 12):
    import transformers

    return _causal_lm(transformers.Qwen2Config(**_decoder_kwargs()), seed, batch, seq)


def gpt2(seed: int = 0, batch: int = 2, seq: int = 12):
    import transformers

    config = transformers.GPT2Config(
        n_embd=64,
        n_layer=2,
        n_head=4,
        n_positions=256,
        vocab_size=1000,
        bos_token_id=1,
        eos_token_id=2,
        attn_implementation=ATTN,
    )
    return _causal_lm(config, seed, batch, seq)


def bert(seed: int = 0, batch: int = 2, seq: int = 12):
    import transformers

    config = transformers.BertConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        vocab_size=1000,
        max_position_embeddings=256,
        attn_implementation=ATTN,
    )
    gen = _seeded(seed)
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    args = (_ids(gen, config.vocab_size, batch, seq), _mask(batch, seq))
    return EncoderHidden(model).eval(), args


def t5(seed: int = 0, batch: int = 2, seq: int = 12, dec_seq: int = 5):
    import transformers

    config = transformers.T5Config(
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        vocab_size=1000,
        decoder_start_token_id=0,
        attn_implementation="eager",
    )
    gen = _seeded(seed)
    model = transformers.T5ForConditionalGeneration(config).eval()
    args = (
        _ids(gen, config.vocab_size, batch, seq),
        _mask(batch, seq),
        _ids(gen, config.vocab_size, batch, dec_seq),
    )
    return Seq2SeqLogits(model).eval(), args


def vit(seed: int = 0, batch: int = 2, image_size: int = 32):
    import transformers

    config = transformers.ViTConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        image_size=image_size,
        patch_size=8,
        num_labels=10,
        attn_implementation=ATTN,
    )
    gen = _seeded(seed)
    model = transformers.ViTForImageClassification(config).eval()
    args = (torch.randn(batch, 3, image_size, image_size, generator=gen),)
    return ImageLogits(model).eval(), args


def whisper(seed: int = 0, batch: int = 2, dec_seq: int = 6):
    import transformers

    config = transformers.WhisperConfig(
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        num_mel_bins=16,
        max_source_positions=32,
        max_target_positions=64,
        vocab_size=1000,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        attn_implementation=ATTN,
    )
    gen = _seeded(seed)
    model = transformers.WhisperForConditionalGeneration(config).eval()
    # the encoder's two convolutions halve the frames: 2 * max_source_positions frames
    features = torch.randn(batch, config.num_mel_bins, 2 * config.max_source_positions, generator=gen)
    args = (features, _ids(gen, config.vocab_size, batch, dec_seq))
    return SpeechLogits(model).eval(), args


MODELS = {
    "llama": llama,
    "mistral": mistral,
    "qwen2": qwen2,
    "gpt2": gpt2,
    "bert": bert,
    "t5": t5,
    "vit": vit,
    "whisper": whisper,
}
