"""The converter authoring surface: what ``sts`` tells, ``shape_tensor``, ``named`` and the
outputs contract the interpreter enforces."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto

import tonnx
from tonnx.converters import named, shape_of, shape_tensor
from tonnx.testing import check_model


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.ReLU()

    def forward(self, x, y):
        return torch.add(self.inner(x), y, alpha=2)


def test_sts_describes_the_call():
    seen = {}

    def add(g, sts, outputs, self, other, alpha=1):
        seen.update(
            dtypes=sts.input_dtypes, shapes=sts.input_shapes, inplace=sts.inplace,
            op=sts.op_name, path=sts.module_path, used=sts.outputs_used,
            values=[type(v).__name__ for v in sts.input_values],
        )
        return g.op.Add(self, g.op.Mul(other, np.array(alpha, np.float32)), outputs=outputs)

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x, y):
            return self.block(x, y)

    args = (torch.rand(2, 3), torch.rand(3))
    check_model(Outer(), args, dispatcher=tonnx.Dispatcher({"aten::add.Tensor": add}),
                dynamic_shapes=({0: "batch"}, None))
    assert seen["dtypes"][:2] == (TensorProto.FLOAT, TensorProto.FLOAT)
    assert seen["shapes"][:2] == (("batch", 3), (3,))
    assert seen["inplace"] is False and seen["op"] == "aten::add" and seen["path"] == "block"
    assert seen["used"] == (True,) and seen["values"][:2] == ["FakeTensor", "FakeTensor"]


def test_outputs_contract_is_enforced():
    def relu(g, sts, outputs, self):
        return g.op.Relu(self)  # a fresh name, not outputs[0]

    with pytest.raises(tonnx.ConverterOutputError, match="pass outputs=outputs"):
        tonnx.to_onnx(torch.nn.ReLU(), (torch.rand(3),), dispatcher=tonnx.Dispatcher({"aten::relu.default": relu}))


def test_named_renames_the_converters_node_and_its_readers():
    def relu(g, sts, outputs, self):
        y = g.op.Relu(self)
        z = g.op.Add(y, y)
        return named(g, y, outputs[0]) if z else None  # y is read by Add: renamed there too

    onx = check_model(torch.nn.ReLU(), (torch.rand(3) - 0.5,), dispatcher=tonnx.Dispatcher({"aten::relu.default": relu}))
    assert [n.op_type for n in onx.graph.node] == ["Relu"]  # the dead Add is removed


def test_aliases_are_allowed():
    def clone(g, sts, outputs, self, memory_format=None):
        return self

    class Model(torch.nn.Module):
        def forward(self, x):
            return x.clone() * 2

    check_model(Model(), (torch.rand(3),), dispatcher=tonnx.Dispatcher({"aten::clone.default": clone}))


def test_one_shape_tensor_for_ints_symints_and_shape_slices():
    def view(g, sts, outputs, self, size):
        rows = shape_of(g, self, 0, 1)  # 1-D slice of the input's shape
        return g.op.Reshape(self, shape_tensor(g, [rows, size[1], -1]), outputs=outputs)

    class Model(torch.nn.Module):
        def forward(self, x):
            return x.view(x.shape[0], 2, -1)

    x, other = torch.rand(3, 4), torch.rand(5, 4)
    check_model(Model(), (x,), other_inputs=[(other,)], dynamic_shapes=({0: "n"},),
                dispatcher=tonnx.Dispatcher({"aten::view.default": view}))


def test_kit_surface_is_pinned():
    """What a pack's tests may use from tonnx.testing (docs/writing-a-pack.md)."""
    import tonnx.testing

    assert sorted(tonnx.testing.__all__) == sorted([
        "ALL_DTYPES", "ExtendedReferenceEvaluator", "FLOAT_DTYPES", "INT_DTYPES", "NUMBER_DTYPES",
        "assert_close", "assert_follows_schema", "assert_pack_covered", "broadcast_shapes",
        "check_model", "check_op", "covered_keys", "dtypes", "make_tensor", "op_keys",
        "op_module", "pack_converters", "reference_kernels", "run_onnxruntime", "run_reference",
        "seeds", "shapes", "tensors", "tolerance", "with_specials",
    ])
    for name in tonnx.testing.__all__:
        assert getattr(tonnx.testing, name) is not None
