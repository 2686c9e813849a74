"""Quantized models through tonnx, run in onnxruntime against the quantized PyTorch model.

- PT2E (torchao's prepare_pt2e/convert_pt2e, XNNPACK symmetric config, per-channel
  weights): static, dynamic, QAT; torchvision's resnet18 and mobilenet_v2 where
  torchvision imports (the torch 2.14.1 environment).
- torchao's quantize_: int8 dynamic activations (per token) with int8 weights, int8 and
  int4 (group 32) weight-only, on an MLP block and a small Llama.

Tolerances: a single quantized layer is exact (0.0) in onnxruntime without its QDQ fusions;
deeper models differ where a float op before a quantize (a Conv or MatMul summed in another
order) crosses a rounding tie and the flipped step propagates: the bound is stated in steps
of the output's quantization (docs/quantization.md has the measured figures).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto

import tonnx

torchao = pytest.importorskip("torchao", reason="torchao is not installed: pip install 'torchao>=0.18' (tonnx[test] has it)")

from torchao.quantization.pt2e import move_exported_model_to_eval  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e  # noqa: E402
from torchao.testing.pt2e._xnnpack_quantizer import (  # noqa: E402
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)


def run(onx, inputs, fused: bool = False) -> np.ndarray:
    """onnxruntime's output; ``fused=False`` keeps the graph's arithmetic (basic
    optimizations: no QDQ fusion into integer kernels)."""
    options = ort.SessionOptions()
    if not fused:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    session = ort.InferenceSession(onx.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)[0]


def pt2e(model, x, *, dynamic=False, qat=False):
    """The model quantized with the XNNPACK symmetric config (per-channel weights)."""
    program = torch.export.export(model, (x,)).module()
    config = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic, is_qat=qat)
    prepared = (prepare_qat_pt2e if qat else prepare_pt2e)(program, XNNPACKQuantizer().set_global(config))
    prepared(x)
    return convert_pt2e(prepared)


def output_step(onx) -> float:
    """The scale of the last DequantizeLinear: one quantization step of the output."""
    from onnx import numpy_helper

    inits = {i.name: i for i in onx.graph.initializer}
    last = [n for n in onx.graph.node if n.op_type == "DequantizeLinear"][-1]
    return float(numpy_helper.to_array(inits[last.input[1]]))


class ConvLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


def int8_weights(onx) -> int:
    """Matrices stored in 8 bits: int8, or uint8 (an int8 weight of MatMulInteger is stored
    + 128 in uint8, tonnx_quant/unsigned_matmul.py)."""
    return sum(1 for i in onx.graph.initializer if i.data_type in (2, 3) and len(i.dims) >= 2)


def test_pt2e_static_conv_linear_is_exact():
    """The issue's model: QuantizeLinear/DequantizeLinear around Conv and Gemm, int8 weights,
    equal to the converted model bit for bit (no fusion); fused, onnxruntime runs
    QLinearConv/QGemm."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8)
    model = pt2e(ConvLinear().eval(), x)
    onx = tonnx.to_onnx(model, (x,))
    ops = [n.op_type for n in onx.graph.node]
    assert ops.count("QuantizeLinear") == 4 and ops.count("DequantizeLinear") == 6, ops
    assert int8_weights(onx) == 2
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_array_equal(run(onx, [x]), expected)


def test_pt2e_dynamic_linear():
    """Dynamic activations (choose_qparams, run-time scale): exact arithmetic; the Gemm on
    dequantized values sums in another order than torch: float32 rounding only."""
    torch.manual_seed(0)
    x = torch.randn(4, 32)
    model = pt2e(torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8)).eval(), x,
                 dynamic=True)
    onx = tonnx.to_onnx(model, (x,))
    assert int8_weights(onx) == 2
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run(onx, [x]), expected, atol=1e-6, rtol=1e-5)


def test_qat_prepared_then_converted():
    """prepare_qat_pt2e, a training step, observers off. The prepared model (fake
    quantization) becomes QuantizeLinear + DequantizeLinear with the scales torch chooses
    from the running statistics: within one step where QuantizeLinear's division meets a
    rounding tie that torch's multiplication by 1 / scale does not (test_fake_quant.py),
    atol 1e-5 tested. After convert_pt2e, the same QDQ graph, exact. (One prepare for both:
    torchao's QAT prepare takes 30-60 s on CI's 2 cores; Conv+BatchNorm takes 150 s.)"""
    from torchao.quantization.pt2e import disable_observer

    torch.manual_seed(0)
    x = torch.randn(4, 32)
    model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8)).train()
    program = torch.export.export(model, (x,)).module()
    config = get_symmetric_quantization_config(is_per_channel=True, is_qat=True)
    prepared = prepare_qat_pt2e(program, XNNPACKQuantizer().set_global(config))
    optimizer = torch.optim.SGD(prepared.parameters(), lr=0.01)
    prepared(x).sum().backward()
    optimizer.step()
    move_exported_model_to_eval(prepared)
    prepared.apply(disable_observer)
    onx = tonnx.to_onnx(prepared, (x,))
    ops = [n.op_type for n in onx.graph.node]
    assert ops.count("QuantizeLinear") == 5 and ops.count("DequantizeLinear") == 5, ops
    with torch.no_grad():
        expected = prepared(x).numpy()
    np.testing.assert_allclose(run(onx, [x]), expected, atol=1e-5, rtol=0)
    converted = convert_pt2e(prepared)
    onx = tonnx.to_onnx(converted, (x,))
    assert "QuantizeLinear" in {n.op_type for n in onx.graph.node}
    with torch.no_grad():
        expected = converted(x).numpy()
    np.testing.assert_array_equal(run(onx, [x]), expected)


@pytest.mark.parametrize("name, steps", [("resnet18", 4), ("mobilenet_v2", 1)])
def test_pt2e_torchvision(name, steps):
    """resnet18: 3.0 output steps measured (a float Conv summed in another order flips a
    step that propagates over 20 quantized layers); mobilenet_v2: exact."""
    torchvision = pytest.importorskip(
        "torchvision", reason="torchvision imports only in CI's second environment (torch 2.14.1, /work/venv2)")
    torch.manual_seed(0)
    x = torch.randn(1, 3, 64, 64)
    model = pt2e(getattr(torchvision.models, name)(weights=None).eval(), x)
    onx = tonnx.to_onnx(model, (x,))
    with torch.no_grad():
        expected = model(x).numpy()
    assert np.abs(run(onx, [x]) - expected).max() <= steps * output_step(onx) * (1 + 1e-5)


def test_torchao_int8_dynamic_activation_mlp_is_exact():
    """torchao's int8 dynamic activations (per token, choose_qparams_affine) and int8
    weights: MatMulInteger on the weight (stored uint8 + 128), equal to torch bit for bit. (With a GELU
    between the layers, whose float32 result differs from torch's in the last bit, a row's
    maximum and so its scale can move: 4.8e-3 measured on this block.)"""
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64)).eval()
    quantize_(model, Int8DynamicActivationInt8WeightConfig())
    x = torch.randn(3, 5, 64)
    onx = tonnx.to_onnx(model, (x,))
    assert [n.op_type for n in onx.graph.node].count("MatMulInteger") == 2
    assert int8_weights(onx) == 2
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_array_equal(run(onx, [x]), expected)


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=256, max_position_embeddings=64)
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


@pytest.mark.parametrize("scheme", ["int8_weight_only", "int4_weight_only", "int8_dynamic"])
def test_torchao_llama(scheme):
    """A small Llama through torchao's quantize_ (tensor subclasses unwrapped, as torchao
    documents for export). int4 (group 32) weights are INT4 initializers with a blocked
    DequantizeLinear at opset 21; int8 weight-only is torchao's x @ w.float() * scale, whose
    cast of the constant int8 weight is DequantizeLinear(w, 1.0) (int8 in the file). Dynamic activations flip
    a step where the float ops before them round differently: 0.0063 measured on logits."""
    from torchao.quantization import (
        Int8DynamicActivationInt8WeightConfig,
        Int8WeightOnlyConfig,
        IntxWeightOnlyConfig,
        quantize_,
    )
    from torchao.quantization.granularity import PerGroup
    from torchao.utils import unwrap_tensor_subclass

    configs = {
        "int8_weight_only": (Int8WeightOnlyConfig(), 1e-5),
        "int4_weight_only": (IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)), 1e-5),
        "int8_dynamic": (Int8DynamicActivationInt8WeightConfig(), 2e-2),
    }
    config, atol = configs[scheme]
    model = _llama()
    quantize_(model, config)
    unwrap_tensor_subclass(model)
    ids = torch.randint(0, 256, (2, 8), generator=torch.Generator().manual_seed(0))
    onx = tonnx.to_onnx(Logits(model), (ids,), target_opset=21)
    # int8 weight-only: the cast of the int8 weight is a DequantizeLinear, kept int8
    if scheme == "int4_weight_only":  # q, k, v, o, gate, up, down, lm_head: INT4, two values a byte
        assert sum(1 for i in onx.graph.initializer if i.data_type == TensorProto.INT4) == 8
    else:
        assert int8_weights(onx) >= 7
    with torch.no_grad():
        expected = Logits(model)(ids).numpy()
    np.testing.assert_allclose(run(onx, [ids]), expected, atol=atol, rtol=0)
