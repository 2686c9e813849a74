"""Mixture-of-experts decoders with ``experts_implementation="eager"`` (issue 13, part 2).

transformers' eager experts loop (``for expert_idx in expert_hit``) stops torch.export with
``GuardOnDataDependentSymNode ... Eq(u0, 0)``; the transformers pack's export patches (which
``to_onnx`` and ``tonnx.export_patches()`` apply) run it over every expert during the export.
The graph has no ``transformers::`` op (the default implementation's ``grouped_mm_fallback``
is converted by the same pack, tests/transformers_pack).
"""

from __future__ import annotations

import importlib

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

import tonnx
from tonnx_transformers.eager_experts import eager_experts_forward as _eager_experts_forward

transformers = pytest.importorskip("transformers")
from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS  # noqa: E402

ATOL = 1e-4
DYNAMIC = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
COMMON = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=128,
    max_position_embeddings=128,
    num_experts_per_tok=2,
)
CONFIGS = {
    "mixtral": lambda: transformers.MixtralConfig(
        **COMMON, intermediate_size=128, num_local_experts=4
    ),
    "qwen3_moe": lambda: transformers.Qwen3MoeConfig(
        **COMMON, intermediate_size=128, moe_intermediate_size=32, num_experts=4, head_dim=16,
        decoder_sparse_step=1, mlp_only_layers=[],
    ),
}


class CausalLMLogits(torch.nn.Module):
    """``input_ids, attention_mask -> logits`` without cache."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        return out.logits


def _model(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    config = CONFIGS[name]()
    config._attn_implementation = "sdpa"
    lm = transformers.AutoModelForCausalLM.from_config(config, experts_implementation="eager")
    assert lm.config._experts_implementation == "eager"
    return CausalLMLogits(lm.eval())


def _inputs(batch: int, seq: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Token ids and an attention mask with left padding in the last row."""
    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[-1, : min(2, seq - 1)] = 0
    ids = torch.randint(0, COMMON["vocab_size"], (batch, seq), generator=gen)
    return {"input_ids": ids, "attention_mask": mask}


@pytest.mark.parametrize("name", ["mixtral", "qwen3_moe"])
def test_eager_experts_export(name):
    model = _model(name)
    onx = tonnx.to_onnx(
        model, kwargs=_inputs(2, 8), dynamic_shapes=DYNAMIC,
        # (the transformers pack stays enabled: its export patches are what makes this traceable)
        dispatcher=tonnx.Dispatcher(packs=["no:ortcontrib"]),
    )
    converters = {p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.converter"}
    assert any(c.startswith("aten:") for c in converters), converters
    assert not [c for c in converters if c.startswith("transformers:")], converters  # no transformers:: op
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    diffs = []
    for batch, seq in [(3, 5), (1, 1)]:  # (1, 1): two of the four experts get no token
        feeds = _inputs(batch, seq, seed=1)
        with torch.no_grad():
            expected = model(**feeds).numpy()
        got = session.run(None, {k: v.numpy() for k, v in feeds.items()})[0]
        diffs.append(float(np.abs(got - expected).max()))
    print(f"\n[{name} eager experts] max abs diff {max(diffs):.3g}")
    assert max(diffs) <= ATOL


def test_without_the_patch_torch_export_fails():
    """The patch is what makes the export work: after the block, torch.export fails again."""
    model = _model("mixtral")
    with tonnx.export_patches():
        pass
    dims = {"batch": torch.export.Dim("batch"), "seq": torch.export.Dim("seq")}
    dynamic = {k: {axis: dims[n] for axis, n in v.items()} for k, v in DYNAMIC.items()}
    with pytest.raises(GuardOnDataDependentSymNode, match=r"Eq\(u0, 0\)"):
        torch.export.export(model, (), kwargs=_inputs(2, 8), dynamic_shapes=dynamic)


def test_patch_scope():
    experts_cls = transformers.models.mixtral.modeling_mixtral.MixtralExperts
    forward = experts_cls.forward
    assert "eager" not in ALL_EXPERTS_FUNCTIONS
    with tonnx.export_patches():
        assert ALL_EXPERTS_FUNCTIONS["eager"] is _eager_experts_forward
        with tonnx.export_patches():  # nested: a no-op
            assert ALL_EXPERTS_FUNCTIONS["eager"] is _eager_experts_forward
        assert ALL_EXPERTS_FUNCTIONS["eager"] is _eager_experts_forward
    assert "eager" not in ALL_EXPERTS_FUNCTIONS
    assert experts_cls.forward is forward
    # what the class's dispatch does with config._experts_implementation == "eager"
    assert ALL_EXPERTS_FUNCTIONS.get_interface("eager", forward) is forward


def test_someone_elses_eager_is_left_alone():
    def theirs(self, hidden_states, top_k_index, top_k_weights):
        return hidden_states

    ALL_EXPERTS_FUNCTIONS["eager"] = theirs
    try:
        with tonnx.export_patches():
            assert ALL_EXPERTS_FUNCTIONS["eager"] is theirs
        assert ALL_EXPERTS_FUNCTIONS["eager"] is theirs
    finally:
        del ALL_EXPERTS_FUNCTIONS["eager"]


# one experts class per shape of the eager loop: (module, class, config class, config, hidden)
VARIANTS = {
    "plain": ("mixtral", "MixtralExperts", "MixtralConfig",
              dict(hidden_size=16, intermediate_size=8, num_local_experts=4), 16),
    "transposed": ("aria", "AriaExperts", "AriaTextConfig",
                   dict(hidden_size=16, intermediate_size=8, moe_num_experts=4,
                        num_attention_heads=2), 16),
    "biases, own gate": ("gpt_oss", "GptOssExperts", "GptOssConfig",
                         dict(hidden_size=16, intermediate_size=8, num_local_experts=4), 16),
    "no gate": ("nemotron_h", "NemotronHExperts", "NemotronHConfig",
                dict(hidden_size=16, moe_intermediate_size=8, n_routed_experts=4,
                     num_attention_heads=2, num_key_value_heads=1, mamba_n_heads=2), 16),
    "post-expert norm": ("muse_spark", "MuseSparkExperts", "MuseSparkTextConfig",
                         dict(moe_hidden_size=16, moe_intermediate_size=8,
                              num_local_experts=4), 16),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_same_numbers_as_the_eager_loop(variant):
    """Bitwise the eager loop's result, for each shape of it (the flags the decorator sets)."""
    module, cls_name, config_name, config, hidden = VARIANTS[variant]
    modeling = importlib.import_module(f"transformers.models.{module}.modeling_{module}")
    config = getattr(modeling, config_name)(**config)
    config._experts_implementation = "eager"
    torch.manual_seed(0)
    experts = getattr(modeling, cls_name)(config).eval()
    with torch.no_grad():
        for p in experts.parameters():
            p.normal_(0, 0.5)
    x = torch.randn(7, hidden)
    index = torch.tensor([[0, 1], [2, 0], [1, 2], [0, 2], [2, 1], [1, 0], [0, 1]])  # 3 gets none
    weights = torch.rand(7, 2)
    with torch.no_grad():
        expected = experts(x, index, weights)  # the class's eager loop
        got = _eager_experts_forward(experts, x, index, weights)
    assert torch.equal(got, expected)
