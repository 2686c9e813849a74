"""The pack as a user gets it: shipped in tonnx's distribution, listed, blockable."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest
import tonnx_transformers
import torch
import transformers.integrations.moe  # noqa: F401  (registers torch.ops.transformers)

import tonnx
from tonnx.testing import assert_follows_schema, assert_pack_covered


class GroupedMM(torch.nn.Module):
    def forward(self, x, weight, offs):
        return torch.ops.transformers.grouped_mm_fallback(x, weight, offs)


def _args():
    return torch.randn(5, 3), torch.randn(2, 3, 4), torch.tensor([2, 5], dtype=torch.int32)


def test_discovered_through_its_entry_point(capsys):
    found = [ep for ep in importlib.metadata.entry_points(group="tonnx.packs") if ep.name == "transformers"]
    assert len(found) == 1, [ep.dist.name for ep in found]  # once: the old contrib pack is gone
    assert found[0].value == "tonnx_transformers"
    assert found[0].dist.name == "tonnx"  # pip install tonnx brings it
    from tonnx.cli import main

    assert main(["packs"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("transformers "))
    assert tonnx_transformers.__version__ in line and "100" in line and "enabled" in line


def test_converts_by_default():
    onx = tonnx.to_onnx(GroupedMM(), _args())
    assert "GatherElements" in {n.op_type for n in onx.graph.node}


def test_blocking_restores_converter_not_found():
    with pytest.raises(tonnx.ConverterNotFoundError) as info:
        tonnx.to_onnx(GroupedMM(), _args(), dispatcher=tonnx.Dispatcher(packs=["no:transformers"]))
    message = str(info.value)
    assert "transformers::grouped_mm_fallback.default" in message
    assert "disabled pack(s) 'transformers'" in message


def test_every_converter_is_tested_and_follows_its_schema():
    assert_pack_covered("transformers", Path(__file__).parent)
    from tonnx_transformers import moe

    for converter in moe.CONVERTERS:
        assert_follows_schema(converter)


def test_costs_nothing_without_transformers():
    """The pack ships with tonnx: an export that never imported transformers does not import it."""
    code = (
        "import sys, torch, tonnx\n"
        "tonnx.to_onnx(torch.nn.Linear(2, 2), (torch.rand(1, 2),))\n"
        "tonnx.to_onnx(torch.nn.Linear(2, 2), (torch.rand(1, 2),))\n"
        "assert 'transformers' not in sys.modules, 'imported'\n"
        "print('done')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "done", result.stderr[-2000:]
