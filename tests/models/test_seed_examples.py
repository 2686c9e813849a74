"""The seed examples of tonnx's design: a neuron, the torch.onnx docs' MLP, an in-house celu."""

from __future__ import annotations

import numpy as np
import onnx
import torch
from torch import nn

import tonnx
from tonnx.testing import assert_close, run_onnxruntime


def _rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


def _matches_torch(onx, model, inputs: tuple, flat_inputs: list) -> float:
    """Runs onnxruntime on ``flat_inputs``, compares with ``model(*inputs)``; max abs diff."""
    with torch.no_grad():
        expected = model(*inputs)
    (got,) = run_onnxruntime(onx, flat_inputs)
    assert_close(expected, got, atol=1e-5, rtol=1e-5)
    return float(np.abs(expected.numpy() - got).max())


def _dims(value_info) -> list:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


# ---------------------------------------------------------------- (a) the neuron


class Neuron(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(x))


def test_neuron_dynamic_batch():
    torch.manual_seed(0)
    model = Neuron().eval()
    onx = tonnx.to_onnx(model, (_rand(4, 3),), dynamic_shapes=({0: "batch"},))
    onnx.checker.check_model(onx)
    assert [n.op_type for n in onx.graph.node] == ["Gemm", "Sigmoid"]
    assert _dims(onx.graph.input[0]) == ["batch", 3]
    assert _dims(onx.graph.output[0]) == ["batch", 1]
    for batch in (4, 9):
        x = _rand(batch, 3, seed=batch)
        _matches_torch(onx, model, (x,), [x])


# ---------------------------------------------------------------- (b) the docs' MLP


class MLPModel(nn.Module):
    """The torch.onnx documentation's model with tensor, dict and list inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.fc0 = nn.Linear(8, 8, bias=True)
        self.fc1 = nn.Linear(8, 4, bias=True)
        self.fc2 = nn.Linear(4, 2, bias=True)
        self.fc_combined = nn.Linear(8 + 8 + 8, 8, bias=True)

    def forward(self, tensor_x: torch.Tensor, input_dict: dict, input_list: list):
        dict_tensor = input_dict["tensor_x"]
        list_tensor = input_list[0]
        combined_tensor = torch.cat([tensor_x, dict_tensor, list_tensor], dim=1)
        combined_tensor = self.fc_combined(combined_tensor)
        combined_tensor = torch.sigmoid(combined_tensor)
        combined_tensor = self.fc0(combined_tensor)
        combined_tensor = torch.sigmoid(combined_tensor)
        combined_tensor = self.fc1(combined_tensor)
        combined_tensor = torch.sigmoid(combined_tensor)
        combined_tensor = self.fc2(combined_tensor)
        output = torch.sigmoid(combined_tensor)
        return output


MLP_DYNAMIC = ({0: "batch_size"}, {"tensor_x": {0: "batch_size"}}, [{0: "batch_size"}])


def _mlp_inputs(batch: int, seed: int = 0) -> tuple:
    return (
        _rand(batch, 8, seed=seed),
        {"tensor_x": _rand(batch, 8, seed=seed + 1)},
        [_rand(batch, 8, seed=seed + 2)],
    )


def _mlp() -> MLPModel:
    torch.manual_seed(0)
    return MLPModel().eval()


def test_mlp_dict_list_inputs():
    model = _mlp()
    onx = tonnx.to_onnx(model, _mlp_inputs(97), dynamic_shapes=MLP_DYNAMIC)
    onnx.checker.check_model(onx)
    assert [i.name for i in onx.graph.input] == ["tensor_x", "input_dict_tensor_x", "input_list_0"]
    for value in [*onx.graph.input, *onx.graph.output]:
        assert _dims(value)[0] == "batch_size", (value.name, _dims(value))
    initializers = {i.name for i in onx.graph.initializer}
    assert {"fc0.weight", "fc0.bias", "fc_combined.weight", "fc2.bias"} <= initializers, initializers
    for batch in (97, 5):
        inputs = _mlp_inputs(batch, seed=batch)
        flat = [inputs[0], inputs[1]["tensor_x"], inputs[2][0]]
        _matches_torch(onx, model, inputs, flat)


def test_mlp_input_names_override():
    model = _mlp()
    names = ["a", "b", "c"]
    onx = tonnx.to_onnx(model, _mlp_inputs(6), dynamic_shapes=MLP_DYNAMIC, input_names=names)
    onnx.checker.check_model(onx)
    assert [i.name for i in onx.graph.input] == names
    inputs = _mlp_inputs(11, seed=3)
    _matches_torch(onx, model, inputs, [inputs[0], inputs[1]["tensor_x"], inputs[2][0]])


# ---------------------------------------------------------------- (c) in-house celu


class LinearCelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(5, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.celu(self.linear(x), alpha=1.5)


def my_celu(g, sts, outputs, self, alpha=1.0):
    "celu(Tensor self, Scalar alpha=1.0) -> Tensor"
    return g.op.Celu(self, alpha=float(alpha), outputs=outputs)


def test_in_house_celu():
    torch.manual_seed(0)
    model = LinearCelu().eval()
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(0)) * 3
    onx = tonnx.to_onnx(model, (x,), dispatcher=tonnx.Dispatcher({"aten::celu.default": my_celu}))
    onnx.checker.check_model(onx)
    _matches_torch(onx, model, (x,), [x])
    (celu,) = [n for n in onx.graph.node if n.op_type == "Celu"]
    props = {p.key: p.value for p in celu.metadata_props}
    assert props["pkg.tonnx.converter"].startswith("<dispatcher>:"), props
    assert [a.f for a in celu.attribute if a.name == "alpha"] == [1.5]


def test_celu_without_dispatcher_uses_the_packs():
    torch.manual_seed(0)
    model = LinearCelu().eval()
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(0)) * 3
    onx = tonnx.to_onnx(model, (x,))
    _matches_torch(onx, model, (x,), [x])
    labels = {p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.converter"}
    assert labels and not [lab for lab in labels if lab.startswith("<dispatcher>:")], labels
