"""Mixtral / Qwen3-MoE / OLMoE / Qwen2-MoE expert blocks -> com.microsoft.MoE, against torch eager.

The pack's op ``tonnx_ortcontrib::softmax_topk_moe`` is checked alone (hypothesis: sizes,
top-k, renormalization, both gate/up layouts) in onnxruntime and in onnx's reference
evaluator with the pack's kernel; its eager kernel against transformers' own block; whole
models through the export patch, with the pack and without it.
"""

from __future__ import annotations

import hypothesis.strategies as st
import numpy as np
import onnxruntime as ort
import pytest
import torch
import transformers
from hypothesis import given
from tonnx_ortcontrib import _target, moe

import tonnx
from tests.bench.bench_export import LogitsOnly
from tests.models.test_kv_cache import DYNAMIC, _check_steps, _inputs
from tonnx.testing import check_model, run_reference

COVERS = {"tonnx_ortcontrib::softmax_topk_moe.default", "tonnx_ortcontrib::routed_moe.default"}
NO_PACK = tonnx.Dispatcher(packs=["no:ortcontrib"])


class FusedOp(torch.nn.Module):
    """The op alone, weights as parameters (initializers, as in a model)."""

    def __init__(self, gate_up, down, biases, top_k, normalize, concatenated, transposed, gate):
        super().__init__()
        self.gate_up, self.down = torch.nn.Parameter(gate_up), torch.nn.Parameter(down)
        self.biases = torch.nn.ParameterList(biases)
        self.args = (top_k, normalize, concatenated, transposed)
        self.gate = gate  # (alpha, beta, limit)

    def forward(self, x, logits):
        biases = list(self.biases) or [None, None]
        return moe.softmax_topk_moe(x, logits, self.gate_up, self.down, *self.args, *biases, *self.gate)


@st.composite
def calls(draw):
    """Sizes, top-k, renormalized or not, gate/up concatenated or interleaved, weights as
    (E, out, in) or transposed, with or without biases, SiLU or GPT-OSS's clamped gate."""
    tokens, hidden = draw(st.integers(2, 9)), draw(st.sampled_from([8, 16]))  # 1 would specialize
    experts, inter = draw(st.integers(2, 5)), draw(st.sampled_from([4, 8]))
    top_k, transposed = draw(st.integers(1, experts)), draw(st.booleans())
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    gate_up = torch.randn(experts, 2 * inter, hidden, generator=gen) / hidden**0.5
    down = torch.randn(experts, hidden, inter, generator=gen) / inter**0.5
    if transposed:
        gate_up, down = gate_up.transpose(1, 2).contiguous(), down.transpose(1, 2).contiguous()
    biases = [torch.randn(experts, 2 * inter, generator=gen), torch.randn(experts, hidden, generator=gen)]
    gate = draw(st.sampled_from([(1.0, 0.0, None), (1.702, 1.0, 7.0), (1.702, 1.0, 0.5)]))
    module = FusedOp(
        gate_up, down, biases if draw(st.booleans()) else [], top_k, draw(st.booleans()), draw(st.booleans()),
        transposed, gate,
    )  # fmt: skip
    return module, (torch.randn(tokens, hidden, generator=gen), 3 * torch.randn(tokens, experts, generator=gen))


def _moe_nodes(onx):
    return [n for n in onx.graph.node if n.op_type == "MoE" and n.domain == "com.microsoft"]


@given(calls())
def test_softmax_topk_moe(call):
    module, inputs = call
    onx = check_model(module, inputs, expect_ops=[moe.KEY], dynamic_shapes=({0: "tokens"}, {0: "tokens"}))
    assert len(_moe_nodes(onx)) == 1
    with torch.no_grad():
        want = module(*inputs).numpy()
    got = run_reference(onx, [x.numpy() for x in inputs])[0]
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-4)


class InPlace(torch.nn.Module):
    """The op where onnxruntime may run MoE in place over its tokens (``MayInplace(0, 0)``):
    the tokens are computed and read by nothing after MoE, whose output an Add reads. torch
    2.13's static-shape graph of transformers' blocks has this arrangement; onnxruntime
    1.31.1's MoE then returned zeros with ``normalize_routing_weights=0``."""

    def __init__(self, op: torch.nn.Module):
        super().__init__()
        self.op = op

    def forward(self, x, *rest):
        return self.op(x * 2.0, *rest) + x


#: the installed onnxruntime's form, and the oldest supported one's (which newer ones run)
TARGETS = [None, {"onnxruntime": "1.31.1"}]


@given(calls(), st.sampled_from(TARGETS))
def test_softmax_topk_moe_run_in_place_matches_torch(call, target):
    module, inputs = call
    dispatcher = tonnx.Dispatcher(target_runtime=target) if target else None
    onx = check_model(InPlace(module), inputs, expect_ops=[moe.KEY], dispatcher=dispatcher)
    normalized = [{a.name: a.i for a in n.attribute}["normalize_routing_weights"] for n in _moe_nodes(onx)]
    resolved = _target.resolve(target or {})
    assert normalized == [int(module.args[1] or not resolved.unnormalized_moe)]
    needed = "1.32.0" if normalized == [0] else "1.31.1"
    assert {p.key: p.value for p in onx.metadata_props}["pkg.tonnx.min_onnxruntime"] == needed


class RoutedOp(torch.nn.Module):
    def __init__(self, gate_up, down, concatenated):
        super().__init__()
        self.gate_up, self.down = torch.nn.Parameter(gate_up), torch.nn.Parameter(down)
        self.concatenated = concatenated

    def forward(self, x, indices, weights):
        return moe.routed_moe(x, indices, weights, self.gate_up, self.down, self.concatenated)


@given(st.data())
def test_routed_moe(data):
    """Experts chosen and weighted by the caller: positive weights, some exactly 0 or below
    float32's smallest normal, a row of zeros (the output is 0 there, as in torch)."""
    draw = data.draw
    tokens, hidden = draw(st.integers(2, 9)), draw(st.sampled_from([8, 16]))
    experts, inter = draw(st.integers(2, 6)), draw(st.sampled_from([4, 8]))
    top_k = draw(st.integers(1, experts))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    module = RoutedOp(
        torch.randn(experts, 2 * inter, hidden, generator=gen) / hidden**0.5,
        torch.randn(experts, hidden, inter, generator=gen) / inter**0.5, draw(st.booleans()),
    )  # fmt: skip
    indices = torch.stack([torch.randperm(experts, generator=gen)[:top_k] for _ in range(tokens)])
    weights = torch.rand(tokens, top_k, generator=gen) * draw(st.sampled_from([1.0, 2.5]))
    if draw(st.booleans()):
        weights[0] = 0.0
        weights[-1, 0] = 1e-39
    inputs = (torch.randn(tokens, hidden, generator=gen), indices, weights)
    onx = check_model(
        module, inputs, expect_ops=[moe.ROUTED_KEY], dynamic_shapes=({0: "tokens"}, {0: "tokens"}, {0: "tokens"})
    )
    assert len(_moe_nodes(onx)) == 1
    with torch.no_grad():
        want = module(*inputs).numpy()
    np.testing.assert_allclose(run_reference(onx, [t.numpy() for t in inputs])[0], want, atol=1e-5, rtol=1e-4)


@given(st.data(), st.sampled_from(TARGETS))
def test_routed_moe_run_in_place_matches_torch(data, target):
    draw = data.draw
    tokens, hidden, experts = draw(st.integers(2, 9)), draw(st.sampled_from([8, 16])), draw(st.integers(2, 6))
    top_k = draw(st.integers(1, experts))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    module = RoutedOp(torch.randn(experts, 16, hidden, generator=gen) / hidden**0.5,
                      torch.randn(experts, hidden, 8, generator=gen) / 8**0.5, draw(st.booleans()))  # fmt: skip
    indices = torch.stack([torch.randperm(experts, generator=gen)[:top_k] for _ in range(tokens)])
    inputs = (torch.randn(tokens, hidden, generator=gen), indices, torch.rand(tokens, top_k, generator=gen))
    dispatcher = tonnx.Dispatcher(target_runtime=target) if target else None
    onx = check_model(InPlace(module), inputs, expect_ops=[moe.ROUTED_KEY], dispatcher=dispatcher)
    normalized = [{a.name: a.i for a in n.attribute}["normalize_routing_weights"] for n in _moe_nodes(onx)]
    assert normalized == [int(not _target.resolve(target or {}).unnormalized_moe)]


# -- whole models ----------------------------------------------------------------------------

COMMON = dict(
    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    vocab_size=128, max_position_embeddings=128, num_experts_per_tok=2,
)  # fmt: skip


def _model(name: str, **overrides):
    if name == "mixtral":
        config = transformers.MixtralConfig(**COMMON, intermediate_size=128, num_local_experts=4, **overrides)
    elif name == "qwen2_moe":
        config = transformers.Qwen2MoeConfig(
            **COMMON, intermediate_size=128, moe_intermediate_size=32, shared_expert_intermediate_size=64,
            num_experts=4, decoder_sparse_step=1, mlp_only_layers=[], **overrides,
        )  # fmt: skip
    elif name == "gpt_oss":  # attention sinks and sliding windows stay with the aten pack
        config = transformers.GptOssConfig(
            **COMMON, intermediate_size=32, num_local_experts=4, head_dim=16, sliding_window=4, **overrides
        )
    elif name in ("deepseek_v3", "deepseek_v2"):  # multi-head latent attention: as many kv heads as heads
        config_class = transformers.DeepseekV3Config if name == "deepseek_v3" else transformers.DeepseekV2Config
        config = config_class(
            **{**COMMON, "num_key_value_heads": 4}, intermediate_size=128, moe_intermediate_size=32,
            n_routed_experts=4, n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1,
            q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, **overrides,
        )  # fmt: skip
    elif name == "olmoe":
        config = transformers.OlmoeConfig(**COMMON, intermediate_size=32, num_experts=4, **overrides)
    else:
        config = transformers.Qwen3MoeConfig(
            **COMMON, intermediate_size=128, moe_intermediate_size=32, num_experts=4, head_dim=16,
            decoder_sparse_step=1, mlp_only_layers=[], **overrides,
        )  # fmt: skip
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def _export_and_check(model, dispatcher=None):
    wrapped = LogitsOnly(model)
    ids = torch.randint(0, 128, (2, 7), generator=torch.Generator().manual_seed(1))
    kwargs = {} if dispatcher is None else {"dispatcher": dispatcher}
    onx = tonnx.to_onnx(wrapped, (ids,), dynamic_shapes=({0: "batch", 1: "seq"},), **kwargs)
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape in ((2, 7), (3, 11)):
        ids = torch.randint(0, 128, shape, generator=torch.Generator().manual_seed(shape[1]))
        with torch.no_grad():
            want = wrapped(ids).numpy()
        np.testing.assert_allclose(session.run(None, {"input_ids": ids.numpy()})[0], want, atol=1e-4, rtol=1e-4)
    return onx, ids, want


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("mixtral", {}), ("qwen3_moe", {"norm_topk_prob": True}), ("qwen3_moe", {"norm_topk_prob": False}),
        ("olmoe", {"norm_topk_prob": False}), ("qwen2_moe", {}), ("gpt_oss", {}), ("deepseek_v3", {}),
        ("deepseek_v2", {}),
    ],
)
def test_models_with_one_moe_node_per_layer(name, overrides):
    model = _model(name, **overrides)
    onx, ids, want = _export_and_check(model)
    nodes = _moe_nodes(onx)
    normalize = {a.name: a.i for a in nodes[0].attribute}["normalize_routing_weights"]
    renormalized = not _target.resolve({}).unnormalized_moe  # before onnxruntime 1.32: always
    if name.startswith("deepseek"):  # layer 0 dense; its own router, the op's given weights
        assert len(nodes) == 1 and normalize == int(renormalized)
    else:  # the router is the op's
        norm = getattr(model.config, "norm_topk_prob", True)
        assert len(nodes) == 2 and normalize == int(norm or renormalized)
        if norm or not renormalized:  # else one TopK gives the weights' sum to multiply back
            assert "TopK" not in {n.op_type for n in onx.graph.node}
    np.testing.assert_allclose(run_reference(onx, [ids.numpy()])[0], want, atol=1e-4, rtol=1e-4)

    standard, _, _ = _export_and_check(model, NO_PACK)
    assert not _moe_nodes(standard)
    assert len(standard.graph.node) > len(onx.graph.node) + 50


def test_the_eager_kernel_is_the_block():
    """The op's eager kernel computes what transformers' block computes (grouped_mm), the
    block's fused forward too (GPT-OSS: its weights scaled up so that the clamp bites)."""
    gpt_oss = _model("gpt_oss")
    with torch.no_grad():
        for param in gpt_oss.model.layers[-1].mlp.experts.parameters():
            param.mul_(50.0)
    models = (_model("mixtral"), _model("qwen3_moe", norm_topk_prob=True), gpt_oss, _model("deepseek_v3"),
              _model("deepseek_v2"))
    for model in models:
        block = model.model.layers[-1].mlp
        x = torch.randn(2, 5, 64, generator=torch.Generator().manual_seed(3))
        spec_of, fused_forward = next((spec, fused) for cls, spec, fused in moe._block_classes() if type(block) is cls)
        with torch.no_grad():
            want = block(x)
            got = fused_forward(block, x, spec_of(block))
        if isinstance(want, tuple):  # GPT-OSS: (output, router scores)
            torch.testing.assert_close(got[1], want[1], atol=0, rtol=0)
            got, want = got[0], want[0]
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)  # float32 sums in other orders


def test_the_patch_is_for_the_export_only_and_only_for_blocks_it_computes():
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    forward = MixtralSparseMoeBlock.forward
    gelu = _model("mixtral", hidden_act="gelu")  # another activation: transformers' graph
    onx, _, _ = _export_and_check(gelu)
    assert not _moe_nodes(onx)
    assert MixtralSparseMoeBlock.forward is forward
    model = _model("mixtral")
    program = torch.export.export(LogitsOnly(model), (torch.randint(0, 128, (2, 7)),))
    assert moe.KEY not in {str(n.target) for n in program.graph.nodes}  # user's own export: unpatched
    assert not _moe_nodes(tonnx.to_onnx(program))


def test_mixtral_decode_steps_with_the_cache():
    """One export with the KV cache: prompts and single-token steps, padded or not, MoE and
    GroupQueryAttention per layer, logits and presents as torch's."""
    model = _model("mixtral")
    onx = tonnx.to_onnx(model, kwargs=_inputs(model.config, 2, 3, 5, "left", 0), dynamic_shapes=DYNAMIC)
    assert len(_moe_nodes(onx)) == 2
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    _check_steps(model, session, [(9, 1, 1, "left"), (4, 3, 1, "left"), (0, 2, 5, "right"), (0, 3, 4, "left")])


def test_a_router_of_the_users_keeps_the_standard_graph():
    """A router subclass defined elsewhere may route otherwise: the block is not patched."""
    from transformers.models.mixtral.modeling_mixtral import MixtralTopKRouter

    class SigmoidRouter(MixtralTopKRouter):
        def forward(self, hidden_states):
            logits = torch.nn.functional.linear(hidden_states, self.weight)
            weights, indices = torch.topk(torch.sigmoid(logits), self.top_k, dim=-1)
            return logits, weights, indices

    model = _model("mixtral")
    for layer in model.model.layers:
        router = SigmoidRouter(model.config)
        router.load_state_dict(layer.mlp.gate.state_dict())
        layer.mlp.gate = router.eval()
    onx, _, _ = _export_and_check(model)
    assert not _moe_nodes(onx)
