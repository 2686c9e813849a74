"""Models the pack does not patch (docs/transformers-pack.md, "What torch.export cannot
capture alone"): tonnx's error says torch.export stopped, at which line of the model, and
what to try."""

from __future__ import annotations

import re

import pytest
import torch

import tonnx

transformers = pytest.importorskip("transformers")


def test_longformer_stops_at_its_global_attention_branch():
    """``is_global_attn = ....any().item()``, then ``if is_global_attn:`` (as in LED)."""
    torch.manual_seed(0)
    config = transformers.LongformerConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=24, attention_window=[4], max_position_embeddings=32,
    )
    model = transformers.LongformerModel(config).eval()
    ids = torch.randint(0, 64, (2, 8))
    with pytest.raises(tonnx.ExportFailedError) as info:
        tonnx.to_onnx(model, kwargs={"input_ids": ids, "attention_mask": torch.ones_like(ids)})
    message = str(info.value)
    assert re.match(r"torch.export stopped at \S+modeling_longformer.py:\d+ in forward: "
                    r"`if is_global_attn:`", message), message[:300]
    assert "torch.cond" in message and "draft_export" in message


def test_latent_attention_with_fewer_key_value_heads_is_the_configs_error():
    """GLM4-MoE-Lite's keys have ``num_attention_heads`` heads whatever ``num_key_value_heads``
    says; eager fails as soon as the mask is not dropped (a padded row), so tonnx's error points
    at the attention call and says to run eager."""
    torch.manual_seed(0)
    config = transformers.Glm4MoeLiteConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=32, q_lora_rank=16, kv_lora_rank=16,
        qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8,
    )
    config._attn_implementation = "sdpa"
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, 64, (2, 6))
    padded = torch.ones_like(ids)
    padded[-1, :2] = 0
    with pytest.raises(RuntimeError, match="must match the size"), torch.no_grad():
        model(input_ids=ids, attention_mask=padded)
    with pytest.raises(tonnx.ExportFailedError) as info:
        tonnx.to_onnx(model, kwargs={"input_ids": ids, "attention_mask": torch.ones_like(ids)})
    message = str(info.value)
    where = (r"torch.export stopped at \S+sdpa_attention.py:\d+ in sdpa_attention_forward:"
             r".*called from \S+modeling_glm4_moe_lite.py:\d+ in forward")
    assert re.match(where, message), message[:400]
    assert "run the model eagerly on the same inputs" in message
