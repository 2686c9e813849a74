"""`tonnx packs` and `tonnx explain` show where packs come from, and ties, without crashing."""

from __future__ import annotations

import subprocess
import sys
import types

import tonnx
from tonnx import cli
from tonnx.dispatch import _manager


def _pack(name):
    def relu(g, sts, outputs, self):
        return g.op.Relu(self, outputs=outputs)

    def tonnx_pack():
        return tonnx.PackSpec(name=name, load=lambda: [tonnx.Converter("aten::relu.default", relu)], priority=100)

    return types.SimpleNamespace(tonnx_pack=tonnx.hookimpl(tonnx_pack))


def test_explain_shows_a_tie_and_how_to_break_it(monkeypatch, capsys):
    manager = _manager.PackManager(autoload=False)
    for name in ("left", "middle", "right"):
        manager.register(_pack(name))
    monkeypatch.setattr(_manager, "_DEFAULT", [manager])
    assert cli.main(["explain", "aten.relu.default"]) == 2
    out = capsys.readouterr().out
    assert "CONFLICT: 3 converters tie" in out and "'left'" in out and "'right'" in out
    assert cli.main(["packs"]) == 0
    assert "(registered)" in capsys.readouterr().out


def test_packs_lists_distribution_version_and_path():
    out = subprocess.run([sys.executable, "-m", "tonnx.cli", "packs"], capture_output=True, text=True, check=True).stdout
    aten = next(line for line in out.splitlines() if line.startswith("aten "))
    assert "tonnx" in aten and "tonnx_aten" in aten and "enabled" in aten
    testpack = next(line for line in out.splitlines() if line.startswith("testpack "))
    assert "0.3.1" in testpack and "tonnx-testpack" in testpack


def test_explain_accepts_what_people_type():
    for spelling in ("aten::relu", "torch.ops.aten.relu.default", "aten.relu.default"):
        out = subprocess.run(
            [sys.executable, "-m", "tonnx.cli", "explain", spelling], capture_output=True, text=True, check=True
        ).stdout
        assert "winner: tonnx_aten.unary.aten_relu from pack 'aten'" in out, out
