"""Issue 8, section 2: every bad input ends in a typed, actionable error, nothing on disk."""

from __future__ import annotations

import os

import pytest
import torch

import tonnx


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Celu(torch.nn.Module):
    def forward(self, x):
        return torch.celu(x)


def export_into(tmp_path, model, args, **kwargs):
    """Exports into an empty folder and returns the error; asserts the folder stays empty."""
    path = tmp_path / "model.onnx"
    with pytest.raises(tonnx.TonnxError) as info:
        tonnx.to_onnx(model, args, filename=path, **kwargs)
    assert os.listdir(tmp_path) == [], "a failed export left files behind"
    return info.value


def test_unsupported_op(tmp_path):
    error = export_into(tmp_path, Celu(), (torch.randn(3),), dispatcher=tonnx.Dispatcher(packs=["no:aten"]))
    assert isinstance(error, tonnx.ConverterNotFoundError)
    assert "aten::celu.default" in str(error) and "enable with packs=['aten']" in str(error)


def test_converter_that_raises_names_itself_and_the_node(tmp_path):
    def broken_relu(g, sts, outputs, self):
        raise RuntimeError("boom")

    error = export_into(tmp_path, Mlp(), (torch.randn(2, 4),), dispatcher=tonnx.Dispatcher({"aten::relu.default": broken_relu}))
    assert isinstance(error, tonnx.ConversionError)
    assert "broken_relu" in str(error) and "relu" in str(error) and "RuntimeError: boom" in str(error)
    assert isinstance(error.__cause__, RuntimeError)


def test_inputs_that_do_not_match_dynamic_shapes(tmp_path):
    error = export_into(tmp_path, Mlp(), (torch.randn(2, 4),), dynamic_shapes=({0: "batch"}, {0: "batch"}))
    assert isinstance(error, (tonnx.DynamicShapesError, tonnx.ExportFailedError))
    assert "dynamic_shapes" in str(error)


def test_non_tensor_input_torch_export_rejects(tmp_path):
    class TakesObject(torch.nn.Module):
        def forward(self, x, options):
            return x * options.scale

    class Options:
        scale = 2.0

    error = export_into(tmp_path, TakesObject(), (torch.randn(2), Options()))
    assert isinstance(error, tonnx.ExportFailedError) and "torch.export" in str(error)


@pytest.mark.parametrize("which", ["input_names", "output_names"])
def test_names_of_the_wrong_length(tmp_path, which):
    error = export_into(tmp_path, Mlp(), (torch.randn(2, 4),), **{which: ["a", "b", "c"]})
    assert which in str(error) and "3 names" in str(error)


def test_unwritable_output_path_fails_before_exporting(tmp_path):
    calls = []

    class Spy(Mlp):
        def forward(self, x):
            calls.append(1)
            return super().forward(x)

    with pytest.raises(tonnx.OutputFileError, match="does not exist"):
        tonnx.to_onnx(Spy(), (torch.randn(2, 4),), filename=tmp_path / "missing" / "m.onnx")
    assert calls == []  # torch.export never ran


def test_forward_that_raises(tmp_path):
    class Raises(torch.nn.Module):
        def forward(self, x):
            raise ValueError("the user's own bug")

    error = export_into(tmp_path, Raises(), (torch.randn(2),))
    assert isinstance(error, tonnx.ExportFailedError) and "the user's own bug" in str(error)


@pytest.mark.parametrize("opset", ["20", 20.0, 17, {"": "20"}])
def test_target_opset_of_the_wrong_kind(opset):
    with pytest.raises(tonnx.TonnxError, match="target_opset"):
        tonnx.to_onnx(Mlp(), (torch.randn(2, 4),), target_opset=opset)


def test_conflicting_packs_stop_only_the_exports_that_use_the_op(tmp_path):
    import types

    def pack(name):
        def tonnx_pack():
            return tonnx.PackSpec(name=name, load=lambda: [tonnx.Converter("aten::relu.default", lambda g, s, o, x: x)])

        return types.SimpleNamespace(tonnx_pack=tonnx.hookimpl(tonnx_pack))

    dispatcher = tonnx.Dispatcher(extra_packs=[pack("left"), pack("right")], packs=["left=300", "right=300"])
    error = export_into(tmp_path, Mlp(), (torch.randn(2, 4),), dispatcher=dispatcher)
    assert isinstance(error, tonnx.ConverterConflictError)
    assert "'left'" in str(error) and "'right'" in str(error)
    assert tonnx.to_onnx(torch.nn.Tanh(), (torch.randn(3),), dispatcher=dispatcher) is not None


# -- issue 21 section 3: typed errors that name the culprit and the fix -------------------------


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.linear(x))


def returns_42(g, sts, outputs, self):
    return 42


def returns_an_unknown_name(g, sts, outputs, self):
    return "no_such_value"


@pytest.mark.parametrize("converter, message", [
    (returns_42, "returned 42 (int) for FX node 'relu'"),
    (returns_an_unknown_name, "returned 'no_such_value' for FX node 'relu' (aten::relu.default), a name no node"),
])
def test_a_converter_returning_no_result_name_is_named(tmp_path, converter, message):
    dispatcher = tonnx.Dispatcher({"aten::relu.default": converter})
    error = export_into(tmp_path, Linear(), (torch.randn(2, 4),), dispatcher=dispatcher)
    assert isinstance(error, tonnx.ConverterOutputError)
    assert converter.__name__ in str(error) and message in str(error)
    assert "--DEBUG--" not in str(error)


def test_a_model_returning_a_string_is_refused_plainly(tmp_path):
    class Says(torch.nn.Module):
        def forward(self, x):
            return "hello"

    error = export_into(tmp_path, Says(), (torch.randn(2),))
    assert isinstance(error, tonnx.UnsupportedError)
    assert "Output 0 of the model is the Python str 'hello'" in str(error) and "--DEBUG--" not in str(error)


@pytest.mark.parametrize("which", ["filename", "report"])
def test_a_path_that_is_not_a_path_is_refused(tmp_path, which):
    with pytest.raises(tonnx.OutputFileError, match=f"{which}=123: give a path"):
        tonnx.to_onnx(Linear(), (torch.randn(2, 4),), **{which: 123})


def test_an_output_name_an_internal_result_has_is_honoured():
    import onnxruntime

    model, x = Linear().eval(), torch.randn(2, 4)
    onx = tonnx.to_onnx(model, (x,), output_names=["linear"])
    assert [o.name for o in onx.graph.output] == ["linear"]
    got = onnxruntime.InferenceSession(onx.SerializeToString()).run(None, {"x": x.numpy()})[0]
    torch.testing.assert_close(torch.from_numpy(got), model(x), rtol=1e-5, atol=1e-6)


def test_an_output_name_an_input_has_is_refused(tmp_path):
    error = export_into(tmp_path, Linear(), (torch.randn(2, 4),), output_names=["linear.weight"])
    assert "output_names[0]='linear.weight' is already the name of an input or a weight" in str(error)
    assert "--DEBUG--" not in str(error)


@pytest.mark.parametrize("which", ["input_names", "output_names"])
def test_names_given_as_one_string_are_refused_with_the_fix(tmp_path, which):
    error = export_into(tmp_path, Linear(), (torch.randn(2, 4),), **{which: "features"})
    assert f"{which}='features' is a string; give a list of names: {which}=['features']" in str(error)
