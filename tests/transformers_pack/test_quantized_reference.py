"""The int8/int4 greedy check's reference holds the folder's weights (llm/quantized_reference.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")

import torch  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from tonnx_transformers.llm.quantize import QuantPlan  # noqa: E402
from tonnx_transformers.llm.quantized_reference import dequantize, quantized_reference  # noqa: E402


def _matmul_nbits(x: np.ndarray, packed, scales, bits: int, block: int, k: int, n: int) -> np.ndarray:
    """onnxruntime's MatMulNBits at accuracy_level 0 (float arithmetic): x @ its weight."""
    node = helper.make_node("MatMulNBits", ["x", "q", "s"], ["y"], domain="com.microsoft",
                            K=k, N=n, bits=bits, block_size=block, accuracy_level=0)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("q", TensorProto.UINT8, packed.shape, packed.tobytes(), raw=True),
         helper.make_tensor("s", TensorProto.FLOAT, scales.shape, scales.tobytes(), raw=True)],
    )
    # IR version 10: what every supported onnxruntime (1.31.1 reads up to 13) loads
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21),
                                                                   helper.make_opsetid("com.microsoft", 1)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@settings(max_examples=12, deadline=None)
@given(bits=st.sampled_from([4, 8]), block=st.sampled_from([16, 32, 64]),
       k=st.integers(1, 100), n=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_dequantized_weight_is_the_kernels_weight(bits, block, k, n, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n, k)).astype(np.float32)  # nn.Linear's [out, in]
    plan = QuantPlan(bits=bits, block_size=block)
    packed, scales = plan.quantize(torch.from_numpy(w), "nk")
    x = rng.standard_normal((3, k)).astype(np.float32)
    got = x @ dequantize(np.asarray(packed), np.asarray(scales), bits, k).T
    np.testing.assert_allclose(got, _matmul_nbits(x, packed, scales, bits, block, k, n), rtol=1e-5, atol=1e-5)


def test_reference_quantizes_linear_layers_and_unties_the_head():
    import transformers

    config = transformers.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
                                      tie_word_embeddings=True)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    table = model.model.embed_tokens.weight.detach().clone()
    linears = {name: m.weight.detach().clone() for name, m in model.named_modules()
               if isinstance(m, torch.nn.Linear)}
    plan = QuantPlan(bits=4)
    quantized_reference(model, plan)
    torch.testing.assert_close(model.model.embed_tokens.weight, table, rtol=0, atol=0)
    for name, before in linears.items():
        after = model.get_submodule(name).weight
        packed, scales = plan.quantize(before, "nk")
        want = dequantize(np.asarray(packed), np.asarray(scales), 4, before.shape[1])
        np.testing.assert_array_equal(after.detach().numpy(), want)
        assert not torch.equal(after, before)
