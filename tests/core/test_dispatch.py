"""Registry and priority rules, pack discovery, blocking, failures, the Dispatcher."""

from __future__ import annotations

import importlib.metadata
import types

import numpy as np
import pytest
import torch

import tonnx
from tonnx import Converter, ConverterConflictError, PackLoadError, PackSpec
from tonnx.dispatch._manager import PackLoadWarning, PackManager
from tonnx.dispatch._registry import INHOUSE_PACK


def conv_a(g, sts, outputs, self):
    return g.op.Relu(self, outputs=outputs)


def conv_b(g, sts, outputs, self):
    return g.op.Relu(self, outputs=outputs)


def make_pack(name, converters, priority=100, fallback=False):
    module = types.SimpleNamespace()

    def tonnx_pack():
        return PackSpec(name=name, load=lambda: converters, priority=priority, fallback=fallback)

    module.tonnx_pack = tonnx.hookimpl(tonnx_pack)
    return module


def manager_with(*packs, strict=False):
    manager = PackManager(autoload=False, strict=strict)
    for pack in packs:
        manager.register(pack)
    return manager


def winner(manager, key, dispatcher=None, opset=18):
    cand = manager.registry(opset, dispatcher or tonnx.Dispatcher()).resolve(key, None)
    return cand and (cand.pack, cand.converter.function)


def test_rule_2_higher_pack_priority_wins():
    manager = manager_with(
        make_pack("low", [Converter("aten::relu.default", conv_a)], priority=10),
        make_pack("high", [Converter("aten::relu.default", conv_b)], priority=200),
    )
    assert winner(manager, "aten::relu.default") == ("high", conv_b)


def test_rule_2_user_can_reprioritise_a_pack():
    manager = manager_with(
        make_pack("low", [Converter("aten::relu.default", conv_a)], priority=10),
        make_pack("high", [Converter("aten::relu.default", conv_b)], priority=200),
    )
    assert winner(manager, "aten::relu.default", tonnx.Dispatcher(packs=["low=300"])) == ("low", conv_a)


def test_rule_3_overload_beats_packet_at_same_priority():
    manager = manager_with(
        make_pack("p1", [Converter("aten::relu", conv_a)]),
        make_pack("p2", [Converter("aten::relu.default", conv_b)]),
    )
    assert winner(manager, "aten::relu.default") == ("p2", conv_b)
    # but a higher-priority packet converter beats a lower overload one
    manager = manager_with(
        make_pack("p1", [Converter("aten::relu", conv_a)], priority=150),
        make_pack("p2", [Converter("aten::relu.default", conv_b)]),
    )
    assert winner(manager, "aten::relu.default") == ("p1", conv_a)


def test_packet_converter_handles_every_overload():
    manager = manager_with(make_pack("p", [Converter(torch.ops.aten.add, conv_a)]))
    assert winner(manager, "aten::add.Tensor") == ("p", conv_a)
    assert winner(manager, "aten::add.Scalar") == ("p", conv_a)


def conv_c(g, sts, outputs, self):
    return g.op.Relu(self, outputs=outputs)


def test_rule_5_tie_raises_where_the_op_is_used_naming_every_tied_converter():
    manager = manager_with(
        make_pack("one", [Converter("aten::relu.default", conv_a)]),
        make_pack("two", [Converter("aten::relu.default", conv_b)]),
        make_pack("three", [Converter("aten::relu.default", conv_c)]),
    )
    registry = manager.registry(18, tonnx.Dispatcher())  # a tie does not stop other ops
    assert len(registry.ties("aten::relu.default")) == 3
    with pytest.raises(ConverterConflictError) as info:
        registry.resolve("aten::relu.default", None)
    message = str(info.value)
    for name in ("conv_a", "conv_b", "conv_c", "'one'", "'two'", "'three'"):
        assert name in message
    assert "'no:three', 'no:two'" in message  # blocking every other pack, not just one


def test_a_tie_on_an_op_the_model_does_not_use_does_not_stop_its_export():
    tied = [make_pack(n, [Converter("aten::celu.default", conv_a)]) for n in ("one", "two")]
    model = torch.nn.ReLU()
    onx = tonnx.to_onnx(model, (torch.randn(3),), dispatcher=tonnx.Dispatcher(extra_packs=tied))
    assert [n.op_type for n in onx.graph.node] == ["Relu"]
    with pytest.raises(ConverterConflictError, match="'one'.*\n.*'two'|'two'.*\n.*'one'"):
        tonnx.to_onnx(torch.nn.CELU(), (torch.randn(3),), dispatcher=tonnx.Dispatcher(extra_packs=tied))


def test_rule_4_tie_between_predicates_raises_when_both_apply():
    manager = manager_with(
        make_pack("one", [Converter("aten::relu.default", conv_a, applies=lambda n: True)]),
        make_pack("two", [Converter("aten::relu.default", conv_b, applies=lambda n: n == "x")]),
    )
    registry = manager.registry(18, tonnx.Dispatcher())
    assert registry.resolve("aten::relu.default", "y").converter.function is conv_a
    with pytest.raises(ConverterConflictError):
        registry.resolve("aten::relu.default", "x")


def test_complex_converters_are_a_separate_pool():
    """A complex=True converter converts only nodes touching complex values; no tie."""
    manager = manager_with(
        make_pack("p", [
            Converter("aten::mul.Tensor", conv_a),
            Converter("aten::mul.Tensor", conv_b, complex=True),
            Converter("aten::polar.default", conv_b, complex=True),
        ]),
    )
    registry = manager.registry(18, tonnx.Dispatcher())
    assert registry.ties("aten::mul.Tensor") == []
    assert registry.resolve("aten::mul.Tensor", None).converter.function is conv_a
    assert registry.resolve("aten::mul.Tensor", None, complex=True).converter.function is conv_b
    assert registry.resolve("aten::polar.default", None) is None
    with pytest.raises(PackLoadError, match="complex='yes'"):
        manager_with(make_pack("bad", [Converter("aten::relu.default", conv_a, complex="yes")]), strict=True).converters("bad")


def test_rule_1_call_site_converters_win():
    manager = manager_with(make_pack("p", [Converter("aten::relu.default", conv_a)], priority=10**5))
    dispatcher = tonnx.Dispatcher({"aten::relu.default": conv_b})
    assert winner(manager, "aten::relu.default", dispatcher) == (INHOUSE_PACK, conv_b)


def test_opset_range_and_predicate():
    manager = manager_with(
        make_pack(
            "p",
            [
                Converter("aten::relu.default", conv_a, opsets=(18, 22)),
                Converter("aten::relu.default", conv_b, opsets=(23, 10_000)),
            ],
        )
    )
    assert winner(manager, "aten::relu.default", opset=18)[1] is conv_a
    assert winner(manager, "aten::relu.default", opset=23)[1] is conv_b


def test_registry_is_cached_per_opset_and_dispatcher():
    manager = manager_with(make_pack("p", [Converter("aten::relu.default", conv_a)]))
    d = tonnx.Dispatcher()
    assert manager.registry(18, d) is manager.registry(18, d)
    assert manager.registry(18, d) is not manager.registry(19, d)


def test_blocked_and_fallback_packs():
    manager = manager_with(
        make_pack("main", [Converter("aten::relu.default", conv_a)]),
        make_pack("fb", [Converter("aten::celu.default", conv_b)], priority=0, fallback=True),
    )
    assert winner(manager, "aten::celu.default") is None
    assert winner(manager, "aten::celu.default", tonnx.Dispatcher(fallback="fb")) == ("fb", conv_b)
    assert winner(manager, "aten::relu.default", tonnx.Dispatcher(packs=["no:main"])) is None
    error = manager.not_found_error({"aten::celu.default": 2}, manager.registry(18, tonnx.Dispatcher()), None)
    assert "aten::celu.default (2 nodes)" in str(error) and "'fb'" in str(error)
    assert error.missing == {"aten::celu.default": 2}


def test_environment_blocks_and_reprioritises(monkeypatch):
    monkeypatch.setenv("TONNX_PACKS", "no:one,two=7")
    manager = manager_with(
        make_pack("one", [Converter("aten::relu.default", conv_a)]),
        make_pack("two", [Converter("aten::relu.default", conv_b)]),
    )
    registry = manager.registry(18, tonnx.Dispatcher())
    (cand,) = registry.candidates("aten::relu.default")
    assert cand.pack == "two" and cand.priority == 7


def test_entry_point_blocked_pack_is_never_imported(monkeypatch):
    ep = importlib.metadata.EntryPoint(name="broken", value="no_such_module_tonnx", group="tonnx.packs")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [ep])
    monkeypatch.setenv("TONNX_PACKS", "no:broken")
    manager = PackManager()
    assert manager.failures == {} and manager.specs == {}


def test_pack_whose_import_fails_is_reported_and_others_load(monkeypatch):
    broken = importlib.metadata.EntryPoint(name="broken", value="no_such_module_tonnx", group="tonnx.packs")
    good = importlib.metadata.EntryPoint(name="aten", value="tonnx_aten", group="tonnx.packs")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [broken, good])
    with pytest.raises(PackLoadError, match="broken.*TONNX_STRICT_PACKS=0"):
        PackManager()  # strict by default, as pytest treats a broken plugin
    monkeypatch.setenv("TONNX_STRICT_PACKS", "0")
    with pytest.warns(PackLoadWarning, match="broken"):
        manager = PackManager()
    assert "aten" in manager.specs and "no_such_module_tonnx" in manager.failures["broken"]


def test_malformed_pack_is_rejected_as_a_whole():
    bad = make_pack("bad", [Converter("aten::relu.default", conv_a), "not a converter"])
    with pytest.raises(PackLoadError, match="bad.*no:bad"):
        manager_with(bad, strict=True).registry(18, tonnx.Dispatcher())
    manager = manager_with(bad)  # not strict: skipped whole, reported, the export goes on
    with pytest.warns(PackLoadWarning, match="bad.*no:bad"):
        registry = manager.registry(18, tonnx.Dispatcher())
    assert not registry.candidates("aten::relu.default") and "bad" in manager.failures


def test_autoload_can_be_disabled(monkeypatch):
    monkeypatch.setenv("TONNX_DISABLE_PACK_AUTOLOAD", "1")
    assert PackManager().specs == {}


def test_real_entry_point_of_installed_test_distribution():
    """tests/packs/tonnx_testpack is pip-installed by the README's test command."""
    import tonnx_testpack

    lib = tonnx_testpack.define_op()
    manager = PackManager()
    assert manager.specs["testpack"].priority == 50
    assert manager.versions["testpack"] == "0.3.1"  # from the distribution's metadata

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.ops.tonnx_testpack.twice(x) + 1

    from tonnx.testing import check_model

    onx = check_model(Model(), (torch.randn(3, 4),))
    assert "Add" in [n.op_type for n in onx.graph.node]
    props = {p.key: p.value for p in onx.graph.node[0].metadata_props}
    assert props["pkg.tonnx.converter"].startswith("testpack:tonnx_testpack.twice")
    del lib


def test_keys_of_overloads_packets_custom_ops_and_callables():
    from tonnx.dispatch import target_key

    assert target_key(torch.ops.aten.add.Tensor) == "aten::add.Tensor"
    assert target_key(torch.ops.aten.relu.default) == "aten::relu.default"
    assert target_key(torch.ops.aten.add) == "aten::add"
    assert target_key(torch.sym_max) == "torch.sym_max"
    assert Converter(torch.ops.aten.add, conv_a).is_packet
    assert not Converter("aten::add.Tensor", conv_a).is_packet


def test_converter_for_a_python_callable_in_the_graph():
    def scale(x):
        return x * 3

    manager = manager_with(make_pack("p", [Converter(scale, conv_a)]))
    key = f"{scale.__module__}.{scale.__qualname__}"
    assert winner(manager, key) == ("p", conv_a)


def _relu_plus_one(g, sts, outputs, self):
    return g.op.Add(g.op.Relu(self), np.array(1, dtype=np.float32), outputs=outputs)


def test_in_house_converter_of_an_op_covers_its_in_place_form():
    """nn.ReLU(inplace=True) calls aten::relu_: the user's aten::relu converter converts it
    (it beats the aten pack's relu_ converter, as a call-site converter beats every pack)."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU(inplace=True))
    x = torch.randn(2, 3)
    onx = tonnx.to_onnx(model, (x,), dispatcher=tonnx.Dispatcher({"aten::relu.default": _relu_plus_one}))
    converters = {p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.converter"}
    assert any(c.startswith(f"{INHOUSE_PACK}:") and "_relu_plus_one" in c for c in converters)
    from tonnx.testing import run_onnxruntime

    np.testing.assert_allclose(run_onnxruntime(onx, [x])[0], model(x).detach().numpy() + 1, atol=1e-6)
    # its own converter for the in-place form wins over the functional one
    both = tonnx.Dispatcher({"aten::relu.default": _relu_plus_one, "aten::relu_.default": conv_a})
    registry = PackManager().registry(18, both)
    assert registry.resolve("aten::relu_.default", None).converter.function is conv_a


@pytest.mark.parametrize(
    "key, message",
    [
        ("relu", "'relu' names no op .*did you mean 'aten::relu.default'"),
        ("torch.relu", "'torch.relu' is a torch function.*did you mean 'aten::relu.default'"),
        ("torch.nn.functional.gelu", "is a torch function.*did you mean 'aten::gelu.default'"),
        ("aten::rleu", "aten.rleu does not exist .*did you mean 'aten::relu.default'"),
    ],
)
def test_a_key_naming_no_op_is_refused_with_a_did_you_mean(key, message):
    with pytest.raises(tonnx.TonnxError, match=message):
        tonnx.to_onnx(torch.nn.ReLU(), (torch.randn(3),), dispatcher=tonnx.Dispatcher({key: conv_a}))


def test_keys_of_python_callables_that_resolve_stay_valid():
    import operator

    def scale(x):
        return x * 3

    for key in ("_operator.mul", "math.ceil", "torch.sym_max", operator.mul, scale):
        assert tonnx.Dispatcher({key: conv_a}).converters[0].function is conv_a


def test_an_in_house_converter_of_a_local_python_function_builds_a_registry():
    def scale(x):
        return x * 3

    registry = PackManager().registry(18, tonnx.Dispatcher({scale: conv_a}))
    assert registry.resolve(f"{scale.__module__}.{scale.__qualname__}", None).converter.function is conv_a
