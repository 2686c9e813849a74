"""The pack as a user gets it: discovered after pip install, above the aten pack, blockable."""

from __future__ import annotations

import importlib.metadata

import tonnx_ortcontrib
import torch

import tonnx
from tonnx.testing import check_model


class Attention(torch.nn.Module):
    def forward(self, q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def _qkv():
    gen = torch.Generator().manual_seed(0)
    return tuple(torch.randn(2, 4, 8, 16, generator=gen) for _ in range(3))


def ms_ops(onx) -> list[str]:
    return sorted(n.op_type for n in onx.graph.node if n.domain == "com.microsoft")


def test_discovered_through_its_entry_point(capsys):
    found = [ep for ep in importlib.metadata.entry_points(group="tonnx.packs") if ep.name == "ortcontrib"]
    assert len(found) == 1, "pip install ./contrib_packs/tonnx-ortcontrib first"
    assert found[0].value == "tonnx_ortcontrib"
    assert found[0].dist.name == "tonnx-ortcontrib"
    assert found[0].dist.version == tonnx_ortcontrib.__version__
    from tonnx.cli import main

    assert main(["packs"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "ortcontrib" in line)
    assert tonnx_ortcontrib.__version__ in line and "200" in line


def test_priority_over_the_aten_pack():
    onx = check_model(Attention(), _qkv())
    assert ms_ops(onx) == ["GroupQueryAttention"]
    node = next(n for n in onx.graph.node if n.domain == "com.microsoft")
    meta = {p.key: p.value for p in node.metadata_props}
    assert meta["pkg.tonnx.converter"].startswith("ortcontrib:")
    assert {o.domain: o.version for o in onx.opset_import}["com.microsoft"] == 1


def test_blocking_restores_the_standard_graph():
    onx = check_model(Attention(), _qkv(), dispatcher=tonnx.Dispatcher(packs=["no:ortcontrib"]))
    assert ms_ops(onx) == []
    assert "com.microsoft" not in {o.domain for o in onx.opset_import}
    assert "Softmax" in {n.op_type for n in onx.graph.node}
    assert "pkg.tonnx.rewrites" not in {p.key for p in onx.metadata_props}


def test_environment_switch_blocks_it_too(monkeypatch):
    from tonnx.dispatch._manager import reset_default_manager

    monkeypatch.setenv("TONNX_PACKS", "no:ortcontrib")
    reset_default_manager()
    try:
        onx = tonnx.to_onnx(Attention(), _qkv())
    finally:
        monkeypatch.delenv("TONNX_PACKS")
        reset_default_manager()
    assert ms_ops(onx) == []


def test_every_converter_is_tested_and_follows_its_schema():
    from pathlib import Path

    from tonnx.testing import assert_follows_schema, assert_pack_covered, pack_converters

    assert_pack_covered("ortcontrib", Path(__file__).parent)
    for converter in pack_converters("ortcontrib"):
        assert_follows_schema(converter)
