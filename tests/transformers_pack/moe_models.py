"""Tiny random-weight MoE decoders (2 layers, hidden 64, 4 experts, top-2), built from configs."""

from __future__ import annotations

import torch
import transformers
from torch import nn

COMMON = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=128,
    max_position_embeddings=128,
    num_experts_per_tok=2,
)


class CausalLMLogits(nn.Module):
    """``input_ids, attention_mask -> logits`` without cache."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


def mixtral():
    return transformers.MixtralConfig(**COMMON, intermediate_size=128, num_local_experts=4)


def qwen3_moe():
    return transformers.Qwen3MoeConfig(
        **COMMON, intermediate_size=128, moe_intermediate_size=32, num_experts=4, head_dim=16,
        decoder_sparse_step=1, mlp_only_layers=[],
    )


def deepseek_v3():
    # multi-head latent attention: as many key/value heads as query heads
    return transformers.DeepseekV3Config(
        **{**COMMON, "num_key_value_heads": 4}, intermediate_size=128, moe_intermediate_size=32, n_routed_experts=4,
        n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1,
        q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
    )


CONFIGS = {"mixtral": mixtral, "qwen3_moe": qwen3_moe, "deepseek_v3": deepseek_v3}


def build(name: str, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    config = CONFIGS[name]()
    config._attn_implementation = "sdpa"
    return CausalLMLogits(transformers.AutoModelForCausalLM.from_config(config).eval())


def inputs(batch: int, seq: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and an attention mask with left padding in the last row."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, COMMON["vocab_size"], (batch, seq), generator=gen)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[-1, :2] = 0
    return ids, mask


def cache_inputs(batch: int, seq: int, past: int, seed: int = 0) -> dict:
    """Keyword inputs of a Mixtral step with a ``DynamicCache`` of ``past`` positions."""
    from transformers.cache_utils import DynamicCache

    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones(batch, past + seq, dtype=torch.int64)
    mask[-1, :2] = 0
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)[:, -seq:]
    kv_heads, head_dim = COMMON["num_key_value_heads"], COMMON["hidden_size"] // COMMON["num_attention_heads"]
    layers = [
        tuple(torch.randn(batch, kv_heads, past, head_dim, generator=gen) for _ in range(2))
        for _ in range(COMMON["num_hidden_layers"])
    ]
    return {
        "input_ids": torch.randint(0, COMMON["vocab_size"], (batch, seq), generator=gen),
        "attention_mask": mask,
        "position_ids": positions,
        "past_key_values": DynamicCache(layers),
    }
