"""The failure report for an op reached through a decomposition, and with a fallback enabled."""

from __future__ import annotations

import pytest
import torch

import tonnx


class ScaledI1e(torch.nn.Module):
    def forward(self, x):
        return torch.special.i1e(x * 2)  # the aten pack decomposes it into prims::bessel_i1e


def _failed_report(tmp_path, dispatcher) -> tuple[str, str]:
    report = tmp_path / "r.md"
    with pytest.raises(tonnx.ConverterNotFoundError) as info:
        tonnx.to_onnx(ScaledI1e(), (torch.randn(3),), dispatcher=dispatcher, report=report)
    return report.read_text(), str(info.value)


def test_an_op_reached_through_a_decomposition_names_the_users_op_and_line(tmp_path):
    text, _ = _failed_report(tmp_path, tonnx.Dispatcher(packs=["no:prims"]))
    section = text[text.index("### `prims::bessel_i1e.default`"):]
    assert "1 node(s): `special_i1e`" in section
    assert "reached through the decomposition of `aten::special_i1e.default`" in section
    assert "test_report_decompositions.py\", line 13, in forward: return torch.special.i1e(x * 2)" in section


def test_with_the_fallback_enabled_it_is_not_suggested_again(tmp_path):
    text, message = _failed_report(tmp_path, tonnx.Dispatcher(packs=["no:prims"], fallback="onnxscript"))
    assert "Dispatcher(fallback='onnxscript')" not in message
    assert "the fallback pack(s) enabled (onnxscript) do not convert them either" in message
    section = text[text.index("### `prims::bessel_i1e.default`"):]
    assert "fallback='onnxscript'" not in section and "--fallback" not in section
    assert "the fallback pack(s) enabled (onnxscript) do not convert it either" in section
