"""Interpreter and to_onnx: inputs, outputs, symbolic sizes, control flow, metadata."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
import torch

import tonnx
from tonnx.testing import check_model, run_onnxruntime


def celu(g, sts, outputs, self, alpha=1.0):
    return g.op.Celu(self, alpha=float(alpha), outputs=outputs)


def view(g, sts, outputs, self, size):
    from tonnx.converters import shape_tensor

    return g.op.Reshape(self, shape_tensor(g, size), outputs=outputs)


IN_HOUSE = tonnx.Dispatcher({"aten::celu.default": celu, "aten::view.default": view})


class Neuron(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 1)

    def forward(self, x):
        return torch.sigmoid(self.linear(x))


def test_node_metadata_names_fx_node_module_and_converter():
    onx = tonnx.to_onnx(Neuron(), (torch.rand(5, 3),))
    gemm, sigmoid = onx.graph.node
    props = {p.key: p.value for p in gemm.metadata_props}
    assert props["pkg.tonnx.fx_node"] == "linear: aten::linear.default"
    assert props["pkg.tonnx.converter"] == "aten:tonnx_aten.linalg.aten_linear"
    assert props["namespace"].startswith("linear: ")
    assert "forward" in props["pkg.tonnx.stack_trace"]
    assert sigmoid.output[0] == "sigmoid"  # ONNX values named after FX nodes
    assert [i.name for i in onx.graph.initializer] == ["linear.weight", "linear.bias"]


def test_accepts_exported_program_and_names():
    ep = torch.export.export(Neuron(), (torch.rand(5, 3),))
    onx = tonnx.to_onnx(ep, input_names=["features"], output_names=["proba"])
    assert [i.name for i in onx.graph.input] == ["features"]
    assert [o.name for o in onx.graph.output] == ["proba"]
    with pytest.raises(tonnx.TonnxError, match="input_names has 2 names"):
        tonnx.to_onnx(ep, input_names=["a", "b"])


def test_dim_objects_and_strings_name_dynamic_dimensions():
    for spec in ({0: torch.export.Dim("batch")}, {0: "batch"}):
        onx = tonnx.to_onnx(Neuron(), (torch.rand(5, 3),), dynamic_shapes=(spec,))
        assert onx.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
        assert onx.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_symbolic_sizes_stay_dynamic():
    class Model(torch.nn.Module):
        def forward(self, x):
            n = x.shape[0] * x.shape[1]
            return x.view(n, -1) * (x.shape[0] // 2) + torch.sym_max(x.shape[1], 3)

    x = torch.rand(4, 6, 5)
    dyn = ({0: "a", 1: "b"},)
    check_model(Model(), (x,), dynamic_shapes=dyn, dispatcher=IN_HOUSE,
                other_inputs=[(torch.rand(7, 2, 5),), (torch.rand(1, 9, 5),)])


def test_higher_order_set_grad_and_cond():
    class Model(torch.nn.Module):
        def forward(self, x, y):
            with torch.no_grad():
                z = x * 2
            return torch.cond((x.sum() > 0), lambda a, b: a + b, lambda a, b: a - b, (z, y))

    class Sum(torch.nn.Module):
        pass

    def sum_(g, sts, outputs, self, dtype=None):
        return g.op.ReduceSum(self, keepdims=0, outputs=outputs)

    def gt(g, sts, outputs, self, other):
        return g.op.Greater(self, np.array(other, dtype=np.float32), outputs=outputs)

    d = tonnx.Dispatcher({"aten::sum.default": sum_, "aten::gt.Scalar": gt})
    x, y = torch.rand(3), torch.rand(3)
    onx = check_model(Model(), (x, y), dispatcher=d, other_inputs=[(-x, y)])
    assert "If" in [n.op_type for n in onx.graph.node]


def test_in_place_ops_rebind_the_mutated_tensor():
    class Model(torch.nn.Module):
        def forward(self, x):
            y = x * 1
            y.add_(1)
            return y * 3

    ep = torch.export.export(Model(), (torch.rand(3),))
    assert "aten::add_.Tensor" in tonnx.testing.op_keys(ep)
    from tonnx_aten.elementwise import aten_add

    check_model(Model(), (torch.rand(3),), dispatcher=tonnx.Dispatcher({"aten::add_.Tensor": aten_add}))


def test_missing_ops_are_all_reported_at_once():
    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.ops.aten.celu(torch.ops.aten.hardshrink(x)) + torch.ops.aten.celu(x)

    with pytest.raises(tonnx.ConverterNotFoundError) as info:
        tonnx.to_onnx(Model(), (torch.rand(3),), dispatcher=tonnx.Dispatcher(packs=["no:aten"]))
    message = str(info.value)
    assert "aten::celu.default (2 nodes)" in message and "aten::hardshrink.default (1 node)" in message
    assert "aten::add.Tensor" in message  # blocked pack: add is missing too
    assert "Dispatcher(fallback=" in message


def test_in_house_converter_beats_the_pack_and_is_recorded():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)

        def forward(self, x):
            return torch.celu(self.fc(x))

    onx = check_model(Model(), (torch.rand(4, 3),), dispatcher=IN_HOUSE)
    celu_node = [n for n in onx.graph.node if n.op_type == "Celu"][0]
    props = {p.key: p.value for p in celu_node.metadata_props}
    assert props["pkg.tonnx.converter"].startswith("<dispatcher>:")


def test_fallback_pack_output_is_recorded_in_the_model():
    def tonnx_pack():
        return tonnx.PackSpec(
            name="myfallback", load=lambda: [tonnx.Converter("aten::celu", celu)], fallback=True, priority=0
        )

    import types

    pack = types.SimpleNamespace(tonnx_pack=tonnx.hookimpl(tonnx_pack))
    model = torch.nn.CELU()
    x = torch.randn(5)
    with pytest.raises(tonnx.ConverterNotFoundError, match="myfallback"):
        tonnx.to_onnx(model, (x,), dispatcher=tonnx.Dispatcher(packs=["no:aten"], extra_packs=[pack]))
    d = tonnx.Dispatcher(packs=["no:aten"], fallback="myfallback", extra_packs=[pack])
    onx = tonnx.to_onnx(model, (x,), dispatcher=d)
    props = {p.key: p.value for p in onx.metadata_props}
    assert props["pkg.tonnx.fallback_ops"] == "aten::celu.default (myfallback) x1"


def test_converter_returning_wrong_number_of_outputs():
    def bad(g, sts, outputs, self, alpha=1.0):
        return (g.op.Relu(self), g.op.Relu(self))

    with pytest.raises(tonnx.ConverterOutputError, match="returned 2 result"):
        tonnx.to_onnx(torch.nn.CELU(), (torch.rand(3),), dispatcher=tonnx.Dispatcher({"aten::celu.default": bad}))


def test_converter_computing_in_the_wrong_dtype_is_caught():
    def bad(g, sts, outputs, self, alpha=1.0):
        return g.op.Cast(self, to=onnx.TensorProto.DOUBLE, outputs=outputs)

    with pytest.raises(tonnx.ConversionError, match="torch says 1"):
        tonnx.to_onnx(torch.nn.CELU(), (torch.rand(3),), dispatcher=tonnx.Dispatcher({"aten::celu.default": bad}))


def test_converter_exception_names_the_node_and_converter():
    def broken(g, sts, outputs, self, alpha=1.0):
        raise ValueError("boom")

    with pytest.raises(tonnx.ConversionError) as info:
        tonnx.to_onnx(torch.nn.CELU(), (torch.rand(3),), dispatcher=tonnx.Dispatcher({"aten::celu.default": broken}))
    message = str(info.value)
    assert "boom" in message and "broken" in message and "celu" in message and "--DEBUG--" in message


def test_filename_is_written_atomically(tmp_path):
    path = tmp_path / "neuron.onnx"
    onx = tonnx.to_onnx(Neuron(), (torch.rand(5, 3),), filename=path)
    assert onnx.load(str(path)) == onx
    assert os.listdir(tmp_path) == ["neuron.onnx"]


def test_external_data_for_large_models(tmp_path):
    path = tmp_path / "neuron.onnx"
    tonnx.to_onnx(Neuron(), (torch.rand(5, 3),), filename=path, external_data=True)
    # initializers smaller than 1 KiB stay inline; the data file exists and the model loads
    assert sorted(os.listdir(tmp_path)) == ["neuron.onnx", "neuron.onnx.data"]
    model = onnx.load(str(path))
    x = np.random.rand(5, 3).astype(np.float32)
    assert run_onnxruntime(model, [x])[0].shape == (5, 1)


def test_unwritable_filename_fails_before_export(tmp_path):
    with pytest.raises(tonnx.OutputFileError, match="does not exist"):
        tonnx.to_onnx(Neuron(), (torch.rand(5, 3),), filename=tmp_path / "no" / "m.onnx")


def test_torch_export_failure_is_reported_as_such():
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    with pytest.raises(tonnx.ExportFailedError, match="torch.export"):
        tonnx.to_onnx(DataDependent(), (torch.rand(3),))


def test_dynamic_shapes_that_do_not_match_inputs():
    with pytest.raises(tonnx.DynamicShapesError, match="axis 2"):
        tonnx.to_onnx(Neuron(), (torch.rand(5, 3),), dynamic_shapes=({2: "batch"},))
    with pytest.raises(tonnx.DynamicShapesError, match="one entry per input"):
        tonnx.to_onnx(Neuron(), (torch.rand(5, 3),), dynamic_shapes=({0: "batch"}, {0: "b"}))
    with pytest.raises(tonnx.DynamicShapesError, match="not arguments of forward"):
        tonnx.to_onnx(Neuron(), (torch.rand(5, 3),), dynamic_shapes={"y": {0: "batch"}})


def test_unsupported_target_opset():
    with pytest.raises(tonnx.TonnxError, match="choose 18 to 26"):
        tonnx.to_onnx(Neuron(), (torch.rand(5, 3),), target_opset=17)
    with pytest.raises(tonnx.TonnxError, match="choose 18 to 26"):  # onnxruntime 1.31.1 refuses 27
        tonnx.to_onnx(Neuron(), (torch.rand(5, 3),), target_opset=27)


@pytest.mark.parametrize("opset", range(18, 27))
def test_every_supported_opset_gives_a_valid_model(opset):
    onx = check_model(Neuron(), (torch.rand(5, 3),), target_opset=opset)
    onnx.checker.check_model(onx, full_check=True)
    assert onx.opset_import[0].version == opset


def test_tuple_dynamic_shapes_with_varargs_forward():
    def add(g, sts, outputs, self, other, alpha=1):
        return g.op.Add(self, other, outputs=outputs)

    from tonnx.testing import check_op

    x, y = torch.rand(4, 3), torch.rand(4, 3)
    onx = check_op(torch.add, [x, y], dynamic_shapes=({0: "n"}, {0: "n"}),
                   other_inputs=[(torch.rand(6, 3), torch.rand(6, 3))],
                   dispatcher=tonnx.Dispatcher({"aten::add.Tensor": add}))
    assert onx.graph.input[1].type.tensor_type.shape.dim[0].dim_param == "n"


def test_mutation_not_returned_by_the_op_is_functionalized():
    from tonnx.pipeline.prepare._mutations import needs_functionalization, written_arguments

    bn = torch.ops.aten._native_batch_norm_legit.default
    assert written_arguments(bn) == ((3, None), (4, None))
    assert written_arguments(torch.ops.aten.add_.Tensor) == ((0, 0),)

    class Model(torch.nn.Module):
        def forward(self, x):
            y = x * 1
            y.add_(1)
            return y

    assert not needs_functionalization(torch.export.export(Model(), (torch.rand(3),)).graph)

    class ViewMutation(torch.nn.Module):
        def forward(self, x):
            y = x * 1
            y[0].add_(1)
            return y

    ep = torch.export.export(ViewMutation(), (torch.rand(3, 2),))
    assert needs_functionalization(ep.graph)
    check_model(ViewMutation(), (torch.rand(3, 2),))


class _Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))
        self.register_buffer("total", torch.zeros(3), persistent=False)

    def forward(self, x):
        self.count += 1
        self.total.add_(x.sum(0))
        return x * self.count


def test_a_buffer_mutated_in_forward_is_an_output_not_dropped():
    """The new value of a buffer forward writes is the output '<buffer>.updated', after
    the model's outputs (it was dropped without a word)."""
    onx = check_model(_Counter(), (torch.rand(2, 3),), other_inputs=[(torch.rand(2, 3),)])
    assert [o.name for o in onx.graph.output][1:] == ["count.updated", "total.updated"]
    signature = json.loads({p.key: p.value for p in onx.metadata_props}["pkg.tonnx.graph_signature"])
    assert {(o["kind"], o.get("target"), o["onnx"]) for o in signature["outputs"]} >= {
        ("BUFFER_MUTATION", "count", "count.updated"), ("BUFFER_MUTATION", "total", "total.updated")}


def test_an_input_written_in_place_is_an_output_not_dropped():
    class AddInPlace(torch.nn.Module):
        def forward(self, x, y):
            y.mul_(2)
            x.add_(y)
            return x * 3

    onx = check_model(AddInPlace(), (torch.rand(2, 3), torch.rand(2, 3)), input_names=["a", "b"])
    assert [o.name for o in onx.graph.output][1:] == ["a.updated", "b.updated"]
