"""``tonnx export`` applies the enabled packs' export patches, as ``to_onnx`` does: a causal LM
called with its ``DynamicCache`` exports from the command line (the patches used to be the
core's, entered by the capture step itself). The model is a mixture-of-experts one with
``experts_implementation="eager"``, whose experts loop torch.export traces only under the
pack's patches (the cache registration, once made, stays for the process)."""

from __future__ import annotations

import onnx
import pytest
import torch

from tonnx.cli import main

transformers = pytest.importorskip("transformers")
from transformers.cache_utils import DynamicCache  # noqa: E402


def mixtral_with_cache():
    """The dict form ``tonnx export`` loads: a tiny eager-experts Mixtral, a cache of 5 positions."""
    config = transformers.MixtralConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=64, max_position_embeddings=64, num_local_experts=4,
        num_experts_per_tok=2,
    )
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, experts_implementation="eager")
    cache = DynamicCache([(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)) for _ in range(2)])
    kwargs = {"input_ids": torch.randint(0, 64, (1, 3)), "attention_mask": torch.ones(1, 8, dtype=torch.int64),
              "past_key_values": cache}
    return {"model": model.eval(), "args": (), "kwargs": kwargs}


def test_export_with_the_cache(tmp_path):
    out = str(tmp_path / "mixtral.onnx")
    assert main(["export", f"{__file__}:mixtral_with_cache", "-o", out, "--no-pack", "ortcontrib", "--quiet"]) == 0
    model = onnx.load(out)
    inputs = [i.name for i in model.graph.input]
    outputs = [o.name for o in model.graph.output]
    assert inputs[2:] == [f"past_key_values.{i}.{kind}" for i in range(2) for kind in ("key", "value")], inputs
    assert outputs == ["logits"] + [f"present.{i}.{kind}" for i in range(2) for kind in ("key", "value")], outputs

