"""Llama, Mistral, BERT and GPT2 from tonnx's model list, with the pack: fused attention,
results within 1e-4 of torch (left padding in one row: masked rows included)."""

from __future__ import annotations

import pytest

from tonnx.testing import check_model

MODELS = ("llama", "mistral", "bert", "gpt2")


@pytest.mark.parametrize("name", MODELS)
def test_model_list(name):
    from tests.models import transformer_models

    model, args = getattr(transformer_models, name)()
    onx = check_model(model, args, atol=1e-4, rtol=1e-4)
    ops = [n.op_type for n in onx.graph.node if n.domain == "com.microsoft"]
    assert ops.count("GroupQueryAttention") == 2  # one per layer
    if name in ("llama", "mistral"):
        rewrites = {p.key: p.value for p in onx.metadata_props}["pkg.tonnx.rewrites"]
        assert "ortcontrib:rotary_embedding" in rewrites and "ortcontrib:gqa_repeat_kv" in rewrites
