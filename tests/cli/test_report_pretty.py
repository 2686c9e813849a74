"""to_onnx(report=...) on success and failure, tonnx.pretty and verbose=1 (in-process)."""

from __future__ import annotations

import os

import onnx
import torch

import tonnx

from .cli_targets import MLP, Mystery


class AngleAndMystery(torch.nn.Module):
    def forward(self, x):
        return torch.angle(x) + Mystery()(x)


def test_report_lists_every_missing_op_with_its_fix(tmp_path):
    report = tmp_path / "r.md"
    try:
        tonnx.to_onnx(AngleAndMystery(), (torch.randn(2, 3),), report=report)
        raise AssertionError("the export should fail")
    except tonnx.ConverterNotFoundError:
        pass
    text = report.read_text()
    assert "## Ops without a converter (2)" in text
    assert "### `aten::angle.default`: 1 node(s): `angle`" in text
    assert "### `tonnx_cli_test::mystery.default`: 2 node(s)" in text
    angle = text[text.index("### `aten::angle.default`"):text.index("### `tonnx_cli_test")]
    assert "fallback pack `onnxscript` converts it" in angle
    assert "Dispatcher(fallback='onnxscript')" in angle and "--fallback onnxscript" in angle
    assert "test_report_pretty.py\", line" in angle  # where the user's code calls it
    mystery = text[text.index("### `tonnx_cli_test"):]
    assert "onnxscript" not in mystery and "my_converter" in mystery
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f]


def _broken_relu(g, sts, outputs, self):
    raise ValueError("this converter is broken")


def test_report_names_the_failing_node_converter_and_user_line(tmp_path):
    report = tmp_path / "r.md"
    dispatcher = tonnx.Dispatcher({"aten::relu.default": _broken_relu})
    try:
        tonnx.to_onnx(MLP(), (torch.rand(2, 3),), dispatcher=dispatcher, report=report)
        raise AssertionError("the export should fail")
    except tonnx.ConversionError:
        pass
    text = report.read_text()
    assert "Phase: **convert**; error: `ConversionError`." in text
    assert "- op: `aten::relu.default`" in text
    assert "- FX node: `%relu : [num_users=1] = call_function[target=torch.ops.aten.relu.default]" in text
    assert "_broken_relu [pack '<dispatcher>'" in text
    assert "- other candidates, in the order tried: tonnx_aten." in text
    assert "return self.b(torch.relu(self.a(x)))" in text  # the user's line, from the stack trace
    assert "| Dispatcher(converters=...) | - | always first | in-house |" in text


def test_report_on_success_and_verbose_prints_pretty(tmp_path, capsys):
    report = tmp_path / "r.md"
    onx = tonnx.to_onnx(MLP(), (torch.rand(2, 3),), report=str(report), verbose=1)
    text = report.read_text()
    assert text.startswith("# tonnx export report: succeeded")
    assert "| aten | 3 | 2 |" in text and "ONNX model: 3 nodes (ai.onnx: 3), 4 initializers." in text
    assert capsys.readouterr().out.strip() == tonnx.pretty(onx)


def test_pretty(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Sigmoid())
    path = str(tmp_path / "m.onnx")
    onx = tonnx.to_onnx(model, (torch.rand(5, 3),), dynamic_shapes=({0: "batch"},), filename=path)
    text = tonnx.pretty(onx)
    lines = text.splitlines()
    assert "inputs (1):" in lines and "  input: FLOAT[batch, 3]" in lines
    assert "  0.weight: FLOAT[2, 3] = [" in text  # 6 values: small enough to print
    assert any(line.startswith("  sigmoid = Sigmoid(linear)  # aten:tonnx_aten.") for line in lines)
    assert "outputs (1):" in lines and "  sigmoid: FLOAT[batch, 2]" in lines
    assert tonnx.pretty(path) == tonnx.pretty(onnx.load(path))
    assert "... 1 more node(s)" in tonnx.pretty(onx, max_nodes=1)
