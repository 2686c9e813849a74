"""export_modules_as_functions: module instances as ONNX local functions, checked in onnxruntime."""

from __future__ import annotations

import onnx
import pytest
import torch
from models import transformer_models as T

import tonnx
from tonnx.testing import assert_close, run_onnxruntime


def _check(onx, model, inputs_list):
    onnx.checker.check_model(onx)
    for inputs in inputs_list:
        with torch.no_grad():
            expected = model(*inputs)
        assert_close(expected, run_onnxruntime(onx, list(inputs))[0], atol=1e-4, rtol=1e-4)


def test_llama_decoder_layers_as_functions_then_inlined():
    import transformers

    layer = transformers.models.llama.modeling_llama.LlamaDecoderLayer
    model, args = T.llama(batch=2, seq=8)
    _, other = T.llama(batch=3, seq=11)
    dynamic = ({0: "batch", 1: "seq"}, {0: "batch", 1: "seq"})
    onx = tonnx.to_onnx(model, args, dynamic_shapes=dynamic, export_modules_as_functions={layer})
    calls = [n for n in onx.graph.node if n.domain == "pkg.tonnx.modules"]
    assert [n.name for n in calls] == ["model.model.layers.0", "model.model.layers.1"]
    assert {f.name for f in onx.functions} <= {"LlamaDecoderLayer", "LlamaDecoderLayer_1"}
    assert all(any(i.startswith("model.model.layers.") for i in n.input) for n in calls)  # weights
    _check(onx, model, [args, other])
    inlined = tonnx.to_onnx(model, args, dynamic_shapes=dynamic,
                            export_modules_as_functions={layer}, inline=True)
    assert not inlined.functions and all(n.domain != "pkg.tonnx.modules" for n in inlined.graph.node)
    _check(inlined, model, [args, other])


def test_every_module_of_bert_nested_functions_written_to_file(tmp_path):
    model, args = T.bert(batch=2, seq=8)
    path = str(tmp_path / "bert.onnx")
    onx = tonnx.to_onnx(model, args, export_modules_as_functions=True, filename=path)
    names = {f.name for f in onx.functions}
    assert {"BertLayer", "BertSelfAttention", "Linear", "LayerNorm"} <= names
    assert len(onx.graph.node) <= 3  # the whole model is one call (plus what sits outside it)
    _check(onnx.load(path), model, [args])


def test_bad_arguments():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    with pytest.raises(tonnx.TonnxError, match="a set of module classes"):
        tonnx.to_onnx(model, (torch.rand(1, 2),), export_modules_as_functions=torch.nn.Linear)
    with pytest.raises(tonnx.TonnxError, match="cannot be combined"):
        tonnx.to_onnx(model, (torch.rand(1, 2),), export_modules_as_functions=True,
                      external_data=True, filename="x.onnx")
