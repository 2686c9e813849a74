"""The pack as tonnx sees it once pip-installed: discovery, priority, blocking, conflicts,
and the kit's meta-tests (every key tested, converters follow their op's schema)."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
import tonnx_example_pack
from tonnx_example_pack.ops import soft_clip

import tonnx
from tonnx import Converter, Dispatcher, PackSpec, hookimpl
from tonnx.testing import assert_follows_schema, assert_pack_covered, op_module, pack_converters

KEY = "tonnx_example::soft_clip.default"
HERE = Path(__file__).parent


def _tonnx(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "tonnx.cli", *args], capture_output=True, text=True, check=True
    ).stdout


def _model():
    import torch

    return op_module(soft_clip, 1, {1: 2.0}), (torch.randn(2, 3),)


def test_every_key_has_a_test():
    assert_pack_covered("example", HERE)


def test_converters_follow_the_op_schema():
    for converter in pack_converters("example"):
        assert_follows_schema(converter)


def test_discovered_through_its_entry_point():
    line = next(row for row in _tonnx("packs").splitlines() if row.startswith("example "))
    assert line.split()[1:5] == ["0.1.0", "150", "1", "enabled"], line
    assert "winner: tonnx_example_pack.converters.example_soft_clip from pack 'example'" in _tonnx(
        "explain", KEY
    )


def test_priority_above_aten_in_the_registry():
    from tonnx.dispatch._manager import default_manager

    packs = default_manager().registry(20, Dispatcher()).packs
    assert packs["example"].priority == 150 > packs["aten"].priority


def test_blocked_pack_is_not_used():
    model, args = _model()
    with pytest.raises(tonnx.ConverterNotFoundError, match="tonnx_example::soft_clip"):
        tonnx.to_onnx(model, args, dispatcher=Dispatcher(packs=["no:example"]))


def _rival(priority: int):
    """Another pack converting the same op, as a second installed distribution would."""

    def rival_soft_clip(g, sts, outputs, x, bound):
        "soft_clip(Tensor x, float bound) -> Tensor"
        scale = g.op.Constant(value_float=float(bound))
        return g.op.Mul(g.op.Tanh(g.op.Div(x, scale)), scale, outputs=outputs)

    @hookimpl
    def tonnx_pack():
        return PackSpec(
            name="rival", load=lambda: [Converter(KEY, rival_soft_clip)], priority=priority
        )

    return types.SimpleNamespace(tonnx_pack=tonnx_pack)


def test_higher_priority_wins_over_a_rival():
    model, args = _model()
    onx = tonnx.to_onnx(model, args, dispatcher=Dispatcher(extra_packs=[_rival(100)]))
    assert [n.op_type for n in onx.graph.node] == ["SoftClip"]
    onx = tonnx.to_onnx(model, args, dispatcher=Dispatcher(extra_packs=[_rival(200)]))
    assert "SoftClip" not in [n.op_type for n in onx.graph.node]


def test_conflict_at_equal_priority_names_both_packs():
    model, args = _model()
    with pytest.raises(tonnx.ConverterConflictError) as info:
        tonnx.to_onnx(model, args, dispatcher=Dispatcher(extra_packs=[_rival(150)]))
    assert "'example'" in str(info.value) and "'rival'" in str(info.value)


def test_reference_kernels_are_loaded_for_the_domain():
    from tonnx.testing import reference_kernels

    kernels = reference_kernels(packs=["example"])
    assert [(k.__name__, k.op_domain) for k in kernels] == [("SoftClip", tonnx_example_pack.DOMAIN)]


def test_tonnx_coverage_reports_the_pack():
    row = next(r for r in _tonnx("coverage", str(HERE), "--pack", "example").splitlines() if r.startswith("example"))
    assert row.split() == ["example", "1", "1", "0", "-"]
