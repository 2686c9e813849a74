"""Issue 8, 0b/1: a converter's invalid output never reaches the user or the disk."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import tonnx


class Softmax2d(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def foo_bar(g, sts, outputs, self):
    return g.make_node("FooBarOp", [self], outputs)


def relu_alpha(g, sts, outputs, self):
    return g.make_node("Relu", [self], outputs, alpha=3.0)


def softmax_axis_7(g, sts, outputs, self):
    return g.op.Softmax(self, axis=7, outputs=outputs)


def wrong_rank(g, sts, outputs, self):
    return g.op.Reshape(g.op.Relu(self), np.array([-1], dtype=np.int64), outputs=outputs)


def add_one_input(g, sts, outputs, self):
    return g.make_node("Add", [self], outputs)


def mixed_types(g, sts, outputs, self):
    return g.op.Add(self, g.op.Cast(self, to=tonnx.converters.onnx_type_from_torch(torch.int64)), outputs=outputs)


def transposed(g, sts, outputs, self):
    return g.op.Transpose(self, perm=[1, 0], outputs=outputs)


BAD_CONVERTERS = {
    "unknown op": (foo_bar, "FooBarOp"),
    "attribute the schema lacks": (relu_alpha, "alpha"),
    "axis out of range": (softmax_axis_7, "axis"),
    "rank other than torch's": (wrong_rank, "rank"),
    "input count": (add_one_input, "input"),
    "mixed element types": (mixed_types, "type"),
    # was accepted: a 4x3 result declared 3x4 (torch's), only onnxruntime warned at run time
    "size other than torch's": (transposed, "differ in dimension 0: (4) vs (3)"),
}


@pytest.mark.parametrize("optimize", [True, False])
@pytest.mark.parametrize("case", sorted(BAD_CONVERTERS))
def test_invalid_converter_output_is_a_typed_error_naming_the_converter(case, optimize, tmp_path):
    function, detail = BAD_CONVERTERS[case]
    path = tmp_path / "model.onnx"
    dispatcher = tonnx.Dispatcher({"aten::relu.default": function})
    with pytest.raises(tonnx.ConverterOutputError) as info:
        tonnx.to_onnx(Softmax2d(), (torch.randn(3, 4),), dispatcher=dispatcher, optimize=optimize, filename=path)
    message = str(info.value)
    assert function.__name__ in message, message  # the converter at fault
    assert "relu" in message  # the FX node
    assert detail.lower() in message.lower(), message
    assert os.listdir(tmp_path) == []  # nothing written


def test_validation_can_be_skipped_for_debugging():
    dispatcher = tonnx.Dispatcher({"aten::relu.default": relu_alpha})
    onx = tonnx.to_onnx(Softmax2d(), (torch.randn(3, 4),), dispatcher=dispatcher, validate=False)
    assert onx.graph.node[0].attribute[0].name == "alpha"


def test_custom_domain_nodes_are_left_to_their_runtime():
    def custom(g, sts, outputs, self):
        g.add_domain("com.example", 1)
        y = g.make_node("Twice", [self], domain="com.example")
        g.set_type(y, g.get_type(self))
        return g.op.Relu(y, outputs=outputs)

    onx = tonnx.to_onnx(Softmax2d(), (torch.randn(3, 4),), dispatcher=tonnx.Dispatcher({"aten::relu.default": custom}))
    assert [n.op_type for n in onx.graph.node] == ["Twice", "Relu"]
