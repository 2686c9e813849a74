"""``tonnx export-llm --precision int4`` of mixture-of-experts folders: the experts as
``com.microsoft.QMoE``, routers in float32 (issue 18 s2).

Mixtral renormalizes its top-k weights, Qwen3-MoE does not (``QMoE`` always does on the CPU:
the rule multiplies the top-k mass back). GPT-OSS stores its experts transposed, with biases
and a clamped SwiGLU: ``QMoE`` holds the converter's transposed copies, quantized. Each folder passes export-llm's greedy check
(transformers holding the folder's int4 weights, fp32 tolerance) and runs in
onnxruntime-genai.
"""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("tonnx_ortcontrib")

import llm_folders  # noqa: E402

from tonnx import UnsupportedError  # noqa: E402
from tonnx_transformers.llm.export import export_llm  # noqa: E402
from tonnx_transformers.llm.quantize import QuantPlan  # noqa: E402
from tonnx_transformers.llm.quantized_reference import dequantize  # noqa: E402


@pytest.fixture(scope="module", params=["mixtral", "qwen3_moe", "gpt_oss"])
def moe_int4(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("moe") / request.param
    model = llm_folders.save_folder(request.param, folder)
    out = folder.parent / "int4"
    result = export_llm(str(folder), out, precision="int4")
    return model, out, result


def _nodes(out, op_type: str) -> list:
    return [n for n in onnx.load(str(out / "model.onnx"), load_external_data=False).graph.node if n.op_type == op_type]


def _attributes(node) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def test_experts_are_qmoe_and_the_check_holds(moe_int4):
    model, out, result = moe_int4
    layers = model.config.num_hidden_layers
    assert not _nodes(out, "MoE")
    qmoe = _nodes(out, "QMoE")
    assert len(qmoe) == layers
    attributes = _attributes(qmoe[0])
    names = ("expert_weight_bits", "block_size", "normalize_routing_weights")
    assert tuple(attributes[n] for n in names) == (4, 32, 1)
    assert result.check.max_abs_diff < 1e-5  # measured 1.8e-7 (Mixtral), 2.1e-7 (Qwen3-MoE, GPT-OSS)
    renormalized = getattr(model.config, "norm_topk_prob", True)
    # a router that does not renormalize: the top-k mass multiplies QMoE's output
    assert len(_nodes(out, "TopK")) == (0 if renormalized else layers)


def test_routers_stay_float32(moe_int4):
    """The router's logits feed QMoE from a float32 MatMul/Gemm, not MatMulNBits."""
    _, out, _ = moe_int4
    graph = onnx.load(str(out / "model.onnx"), load_external_data=False).graph
    producers = {o: n for n in graph.node for o in n.output}
    for node in _nodes(out, "QMoE"):
        assert producers[node.input[1]].op_type in ("MatMul", "Gemm")


def test_qmoe_weights_are_onnxruntimes_blocks_of_each_expert(moe_int4):
    from onnx.numpy_helper import to_array

    model, out, _ = moe_int4
    node = _nodes(out, "QMoE")[0]
    weights = {i.name: i for i in onnx.load(str(out / "model.onnx")).graph.initializer}
    experts = model.model.layers[0].mlp.experts
    plan = QuantPlan(bits=4)

    def rows(weight):  # each expert's [N, K] matrix (GPT-OSS stores [K, N])
        return [e.T if experts.is_transposed else e for e in weight.detach()]

    down = [plan.quantize(e, "nk") for e in rows(experts.down_proj)]
    packed = np.stack([p.reshape(p.shape[0], -1) for p, _ in down])
    np.testing.assert_array_equal(to_array(weights[node.input[5]]), packed)
    np.testing.assert_array_equal(to_array(weights[node.input[6]]), np.stack([s for _, s in down]))
    # fc1 holds gate and up rows interleaved (onnxruntime's swiglu_fusion=1), as GPT-OSS
    # stores them; the others concatenate them
    gate_up = [plan.quantize(e, "nk") for e in rows(experts.gate_up_proj)]
    inter = gate_up[0][0].shape[0] // 2
    order = np.stack([np.arange(inter), np.arange(inter) + inter], axis=1).reshape(-1)
    if experts.is_transposed:
        order = np.arange(2 * inter)
    packed = np.stack([p.reshape(p.shape[0], -1)[order] for p, _ in gate_up])
    np.testing.assert_array_equal(to_array(weights[node.input[2]]), packed)
    np.testing.assert_array_equal(to_array(weights[node.input[3]]), np.stack([s[order] for _, s in gate_up]))


def test_the_check_sees_the_experts(moe_int4):
    """The reference with the folder's int4 experts passes; with float32 experts (the linear
    layers still the folder's) it is refused."""
    from tonnx_transformers.llm.quantized_reference import float_kernels, quantized_reference
    from tonnx_transformers.llm.verify import GreedyCheckError, check_greedy

    model, out, _ = moe_int4
    experts = {f"model.layers.{i}.mlp.experts.down_proj" for i in range(model.config.num_hidden_layers)}
    with float_kernels(str(out / "model.onnx")) as checked:
        folders = QuantPlan(bits=4, experts_rewritten=experts)
        good = check_greedy(checked, quantized_reference(copy.deepcopy(model), folders), llm_folders.VOCAB)
        assert good.max_abs_diff < 1e-5
        with pytest.raises(GreedyCheckError, match="differ"):
            check_greedy(checked, quantized_reference(copy.deepcopy(model), QuantPlan(bits=4)), llm_folders.VOCAB)


def test_qmoe_folder_generates_in_genai(moe_int4):
    og = pytest.importorskip("onnxruntime_genai")
    _, out, result = moe_int4
    got = llm_folders.genai_tokens(og, out, 8)
    assert len(got) == 8 and all(0 <= t < llm_folders.VOCAB for t in got)


def test_a_block_size_not_dividing_the_experts_is_refused(tmp_path):
    folder = tmp_path / "qwen3_moe"
    llm_folders.save_folder("qwen3_moe", folder)  # moe_intermediate_size 32
    with pytest.raises(UnsupportedError, match="expert intermediate size 32 is not a multiple of the block size 64"):
        export_llm(str(folder), tmp_path / "out", precision="int4", block_size=64, verify=False)
    assert not (tmp_path / "out").exists()


def test_int8_keeps_the_experts_float32(tmp_path):
    """onnxruntime's int8 QMoE rounds the activations: int8 folders keep MoE."""
    folder = tmp_path / "mixtral"
    llm_folders.save_folder("mixtral", folder)
    out = tmp_path / "int8"
    result = export_llm(str(folder), out, precision="int8")
    assert len(_nodes(out, "MoE")) == 2 and not _nodes(out, "QMoE")
    assert result.check.max_abs_diff < 1e-5  # measured 1.5e-7


def _session(node, initializers: dict):
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    graph = helper.make_graph(
        [node], "moe", [helper.make_tensor_value_info(n, 1, None) for n in ("x", "router")],
        [helper.make_tensor_value_info("y", 1, None)], [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=10)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@settings(max_examples=12, deadline=None)
@given(experts=st.integers(2, 6), top_k=st.integers(1, 2), tokens=st.integers(1, 40),
       hidden_blocks=st.integers(1, 3), inter_blocks=st.integers(1, 3), block_size=st.sampled_from([16, 32]),
       seed=st.integers(0, 2**16))
def test_int4_qmoe_computes_moe_of_the_dequantized_experts(experts, top_k, tokens, hidden_blocks, inter_blocks,
                                                          block_size, seed):
    """What the folders rely on, in the installed onnxruntime: QMoE (int4, renormalized) is
    MoE over the dequantized experts, to float32 rounding."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    hidden, inter = hidden_blocks * block_size, inter_blocks * block_size
    plan = QuantPlan(bits=4, block_size=block_size)

    def quantized(weights):
        parts = [plan.quantize(w, "nk") for w in weights]
        packed = np.stack([p.reshape(p.shape[0], -1) for p, _ in parts])
        dequantized = [dequantize(p, s, 4, w.shape[1]) for (p, s), w in zip(parts, weights)]
        return packed, np.stack([s for _, s in parts]), np.stack(dequantized)

    q1, s1, d1 = quantized(rng.standard_normal((experts, 2 * inter, hidden)).astype(np.float32) * 0.1)
    q2, s2, d2 = quantized(rng.standard_normal((experts, hidden, inter)).astype(np.float32) * 0.1)
    common = dict(domain="com.microsoft", k=top_k, activation_type="swiglu", swiglu_fusion=1,
                  normalize_routing_weights=1, activation_alpha=1.0, activation_beta=0.0)
    moe = _session(helper.make_node("MoE", ["x", "router", "w1", "", "w2", ""], ["y"], **common),
                   {"w1": d1, "w2": d2})
    qmoe = _session(helper.make_node("QMoE", ["x", "router", "q1", "s1", "", "q2", "s2", ""], ["y"],
                                     expert_weight_bits=4, block_size=block_size, **common),
                    {"q1": q1, "s1": s1, "q2": q2, "s2": s2})
    feeds = {"x": rng.standard_normal((tokens, hidden)).astype(np.float32),
             "router": rng.standard_normal((tokens, experts)).astype(np.float32)}
    want, got = moe.run(None, feeds)[0], qmoe.run(None, feeds)[0]
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    assert torch.isfinite(torch.from_numpy(got)).all()
