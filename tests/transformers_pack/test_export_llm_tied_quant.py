"""int4 / int8 folders of a model whose lm head is its embedding table (Qwen3-0.6B's form).

The embeddings are gathered from the head's quantized table (``GatherBlockQuantized``, as
onnxruntime-genai's builder writes them) instead of a float32 copy; the greedy check's
reference gathers the same dequantized rows. With Qwen3's per-head q/k norm, q/k/v are one
``MatMulNBits`` (ortcontrib's ``gqa_packed_qkv_norm``) when the pack targets onnxruntime 1.32+.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import llm_folders  # noqa: E402

from tonnx_transformers.llm.quantize import QuantPlan  # noqa: E402
from tonnx_transformers.llm.quantized_reference import dequantize, quantized_reference  # noqa: E402

LAYERS = llm_folders.COMMON["num_hidden_layers"]


def _tied_qwen3():
    import transformers

    torch.manual_seed(0)
    config = transformers.Qwen3Config(**llm_folders.COMMON, head_dim=16, tie_word_embeddings=True)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


@pytest.fixture(scope="module", params=["int4"])
def exported(request, tmp_path_factory):
    from tonnx_transformers.llm.export import export_llm

    folder = tmp_path_factory.mktemp("tied") / "qwen3"
    _tied_qwen3().save_pretrained(folder)
    llm_folders.tokenizer().save_pretrained(folder)
    out = folder.parent / request.param
    return out, export_llm(str(folder), out, precision=request.param)


def test_tied_embedding_is_gathered_from_the_heads_quantized_table(exported):
    out, result = exported
    assert result.check.steps == 8 and result.check.max_abs_diff < 1e-4  # the greedy check held
    model = onnx.load(str(out / "model.onnx"), load_external_data=False)
    nodes = {n.op_type: n for n in model.graph.node}
    assert "Gather" not in nodes
    gather = nodes["GatherBlockQuantized"]
    head = next(n for n in model.graph.node if "logits" in n.output)
    table = next(n for n in model.graph.node if n.output[0] == gather.input[0])
    assert head.op_type == "MatMulNBits" and table.op_type == "Reshape"
    assert table.input[0] == head.input[1] and gather.input[2] == head.input[2]  # one table
    vocab, hidden = llm_folders.VOCAB, llm_folders.COMMON["hidden_size"]
    floats = [i for i in model.graph.initializer if tuple(i.dims) == (vocab, hidden)]
    assert floats == []  # no float32 copy of the table
    if llm_folders.fused_attention_with_cache():  # q/k/v one MatMulNBits through the q/k norm
        assert sum(n.op_type == "MatMulNBits" for n in model.graph.node) == 5 * LAYERS + 1
        rotary = [a.i for a in nodes["GroupQueryAttention"].attribute if a.name == "do_rotary"]
        assert "RotaryEmbedding" not in nodes and rotary == [1]


def test_reference_gathers_the_dequantized_head_when_the_folder_does():
    """With ``plan.gathered`` naming the tied weight the embedding reads the head's
    dequantized weight; without, it keeps float32 (the folder's untied form)."""
    for gathered in (set(), {"lm_head.weight"}):
        model = _tied_qwen3()
        table = model.model.embed_tokens.weight.detach().clone()
        plan = QuantPlan(bits=4)
        plan.gathered = gathered
        quantized_reference(model, plan)
        packed, scales = plan.quantize(table, "nk")
        want = dequantize(np.asarray(packed), np.asarray(scales), 4, table.shape[1])
        np.testing.assert_array_equal(model.lm_head.weight.detach().numpy(), want)
        embedding = model.model.embed_tokens.weight.detach().numpy()
        np.testing.assert_array_equal(embedding, want if gathered else table.numpy())


@pytest.mark.parametrize("bits", [4, 8])
def test_gather_block_quantized_is_the_dequantized_rows(bits):
    """onnxruntime's GatherBlockQuantized (no zero points, uint8 data ``[N, K * bits / 8]``)
    on the quantizer's blocks gives exactly :func:`dequantize`'s rows, in the installed
    onnxruntime (the README env's 1.32 and the corner env's 1.31.1)."""
    import onnxruntime as ort

    rng = np.random.default_rng(bits)
    n, k = 50, 64
    plan = QuantPlan(bits=bits)
    packed, scales = plan.quantize(rng.standard_normal((n, k)).astype(np.float32), "nk")
    node = helper.make_node("GatherBlockQuantized", ["data", "ids", "scales"], ["y"], domain="com.microsoft",
                            bits=bits, block_size=32, gather_axis=0, quantize_axis=1)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, None])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.asarray(packed).reshape(n, -1), "data"),
         onnx.numpy_helper.from_array(np.asarray(scales), "scales")],
    )
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21),
                                                                   helper.make_opsetid("com.microsoft", 1)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ids = np.array([[3, 0, 49, 7, 3]], np.int64)
    want = dequantize(np.asarray(packed), np.asarray(scales), bits, k)[ids]
    np.testing.assert_array_equal(session.run(None, {"ids": ids})[0], want)
