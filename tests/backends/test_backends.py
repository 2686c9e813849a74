"""The public two-phase API and the torch.compile backends, against torch eager."""

from __future__ import annotations

import pytest
import torch
from models import transformer_models as T
from models import vision_nets as V

import tonnx
from tonnx.backends import OnnxGraph, onnx_custom_backend, onnx_debug_backend


def test_export_program_then_convert_keeps_dimension_names():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
    x = torch.rand(4, 3)
    ep = tonnx.export_program(model, (x,), dynamic_shapes=({0: "batch"},))
    assert isinstance(ep, torch.export.ExportedProgram)
    onx = tonnx.convert(ep, target_opset=18, input_names=["features"])
    assert onx.graph.input[0].name == "features"
    assert onx.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert onx.opset_import[0].version == 18
    direct = tonnx.to_onnx(model, (x,), dynamic_shapes=({0: "batch"},), target_opset=18,
                           input_names=["features"])
    assert [n.op_type for n in onx.graph.node] == [n.op_type for n in direct.graph.node]
    with pytest.raises(tonnx.TonnxError, match="capture it first with tonnx.export_program"):
        tonnx.convert(model)


def _compiled_matches_eager(model, args, backend, atol):
    torch._dynamo.reset()
    graphs = []

    def counting(gm, example_inputs, **options):
        graph = backend(gm, example_inputs, **options)
        graphs.append(graph)
        return graph

    with torch.no_grad():
        expected = model(*args)
        got = torch.compile(model, backend=counting)(*args)
    torch.testing.assert_close(got, expected, atol=atol, rtol=1e-4)
    assert graphs and all(isinstance(g, OnnxGraph) and len(g.models) == 1 for g in graphs)
    torch._dynamo.reset()
    return graphs


MODELS = {
    "llama": lambda: T.llama(batch=2, seq=8),
    "bert": lambda: T.bert(batch=2, seq=8),
    "resnet18": lambda: (V.resnet18(), (torch.randn(2, 3, 32, 32),)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_onnx_custom_backend_matches_eager(name):
    model, args = MODELS[name]()
    graphs = _compiled_matches_eager(model, args, onnx_custom_backend, atol=1e-4)
    assert sum(len(onx.graph.node) for g in graphs for onx in g.models.values()) > 20


@pytest.mark.parametrize("name", sorted(MODELS))
def test_onnx_debug_backend_matches_eager(name):
    model, args = MODELS[name]()
    _compiled_matches_eager(model, args, onnx_debug_backend, atol=1e-4)


class WithGraphBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 8), torch.nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.a(x))
        torch._dynamo.graph_break()
        return self.b(h).softmax(-1), h.mean()


@pytest.mark.parametrize("backend", [onnx_custom_backend, onnx_debug_backend])
def test_graph_breaks_and_new_shapes(backend):
    model = WithGraphBreak().eval()
    graphs = _compiled_matches_eager(model, (torch.rand(3, 4),), backend, atol=1e-5)
    assert len(graphs) == 2  # one ONNX model on each side of the break
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for batch in (2, 5, 7):  # new sizes: dynamo recompiles or the graph converts again
            x = torch.rand(batch, 4)
            torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-4)
    torch._dynamo.reset()
