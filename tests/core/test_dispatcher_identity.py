"""Issue 8, defect 0: a registry is only ever reused by an equal dispatcher.

Registries used to be cached by ``id(dispatcher)``: a new Dispatcher allocated at a freed
one's address silently got the old registry, hence the old in-house converters.
"""

from __future__ import annotations

import gc
import importlib.metadata
import types

import numpy as np
import pytest
import torch

import tonnx
from tonnx import Converter, PackLoadError, PackSpec
from tonnx.dispatch._manager import PackManager
from tonnx.testing import run_onnxruntime


def _relu_times(factor: float):
    def convert(g, sts, outputs, self):
        return g.op.Mul(g.op.Relu(self), np.array(factor, dtype=np.float32), outputs=outputs)

    return convert


def test_each_new_dispatcher_in_a_loop_uses_its_own_converter():
    """The pattern of docs/quickstart.md, in a loop with garbage collection in between."""
    model, x = torch.nn.ReLU(), torch.tensor([-1.0, 2.0, 3.0])
    for i in range(25):
        factor = float(i + 1)
        onx = tonnx.to_onnx(model, (x,), dispatcher=tonnx.Dispatcher({"aten.relu.default": _relu_times(factor)}))
        (got,) = run_onnxruntime(onx, [x])
        np.testing.assert_array_equal(got, np.array([0.0, 2.0, 3.0], dtype=np.float32) * factor)
        gc.collect()


def test_the_manager_never_hands_a_registry_to_a_different_dispatcher():
    manager = PackManager(autoload=False)
    for i in range(200):
        function = _relu_times(float(i))
        registry = manager.registry(18, tonnx.Dispatcher({"aten::relu.default": function}))
        assert registry.resolve("aten::relu.default", None).converter.function is function
        del registry
        gc.collect(0)  # the young generation: a full collection of a long test process took 1 s each
    assert len(manager._registries) <= 32  # bounded


def test_equal_dispatchers_share_a_registry_and_are_immutable():
    function = _relu_times(2.0)
    a = tonnx.Dispatcher({"aten::relu.default": function}, packs=["no:testpack"])
    b = tonnx.Dispatcher({"aten::relu.default": function}, packs=["no:testpack"])
    assert a == b and hash(a) == hash(b)
    assert a != tonnx.Dispatcher({"aten::relu.default": _relu_times(2.0)})
    manager = PackManager(autoload=False)
    assert manager.registry(18, a) is manager.registry(18, b)
    with pytest.raises(AttributeError, match="immutable"):
        a.converters = ()


def _relu_pack(name: str):
    def relu_as_abs(g, sts, outputs, self):  # deliberately different from aten's
        return g.op.Abs(self, outputs=outputs)

    def tonnx_pack():
        return PackSpec(name=name, load=lambda: [Converter("aten::relu.default", relu_as_abs)], priority=900)

    return types.SimpleNamespace(tonnx_pack=tonnx.hookimpl(tonnx_pack))


def test_extra_packs_apply_only_to_the_exports_that_name_them():
    model, x = torch.nn.ReLU(), torch.tensor([-1.0, 2.0])
    with_pack = tonnx.to_onnx(model, (x,), dispatcher=tonnx.Dispatcher(extra_packs=[_relu_pack("absrelu")]))
    assert [n.op_type for n in with_pack.graph.node] == ["Abs"]
    default = tonnx.to_onnx(model, (x,))
    assert [n.op_type for n in default.graph.node] == ["Relu"]
    np.testing.assert_array_equal(run_onnxruntime(default, [x])[0], [0.0, 2.0])


def test_an_extra_pack_cannot_take_the_name_of_an_installed_one():
    with pytest.raises(PackLoadError, match="aten"):
        tonnx.to_onnx(torch.nn.ReLU(), (torch.randn(2),), dispatcher=tonnx.Dispatcher(extra_packs=[_relu_pack("aten")]))


@pytest.mark.parametrize(
    "spec, message",
    [
        (lambda: "not a spec", "expected tonnx.PackSpec"),
        (lambda: PackSpec(name="bad name!", load=list), "not a simple identifier"),
        (lambda: PackSpec(name="p", load=list, priority="high"), "priority"),
        (lambda: PackSpec(name="p", load=list, domains={"com.x": "1"}), "domains"),
        (lambda: 1 / 0, "raised ZeroDivisionError"),
    ],
)
def test_an_invalid_pack_is_refused_whole_and_leaves_no_trace(spec, message):
    pack = types.SimpleNamespace(tonnx_pack=tonnx.hookimpl(spec))
    manager = PackManager(autoload=False, strict=True)
    with pytest.raises(PackLoadError, match=message):
        manager.register(pack, name="p")
    assert manager.specs == {} and not manager._pm.get_plugins()


def test_two_installed_packs_with_one_name_are_an_error():
    manager = PackManager(autoload=False, strict=True)
    manager.register(_relu_pack("twin"))
    with pytest.raises(PackLoadError, match="Two packs are named 'twin'"):
        manager.register(_relu_pack("twin"))


def test_autoload_off_with_an_allow_list(monkeypatch):
    """TONNX_DISABLE_PACK_AUTOLOAD=1 loads nothing, unless TONNX_PACKS names the pack."""
    monkeypatch.setenv("TONNX_DISABLE_PACK_AUTOLOAD", "1")
    assert PackManager().specs == {}
    monkeypatch.setenv("TONNX_PACKS", "aten")
    manager = PackManager()
    assert list(manager.specs) == ["aten"]
    assert manager.origins["aten"].distribution == "tonnx"
    monkeypatch.delenv("TONNX_PACKS")
    # the argument form: a dispatcher naming the pack
    manager = PackManager()
    registry = manager.registry(18, tonnx.Dispatcher(packs=["aten"]))
    assert registry.resolve("aten::relu.default", None).pack == "aten"


def test_entry_point_name_must_match_the_pack_name(monkeypatch):
    import tonnx_testpack

    ep = importlib.metadata.EntryPoint(name="other", value="tonnx_testpack", group="tonnx.packs")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [ep])
    with pytest.raises(PackLoadError, match="entry point is named 'other'"):
        PackManager()
    assert tonnx_testpack  # imported: the failure is about its name, not its import


@pytest.mark.parametrize("spelling", ["aten::relu.default", "aten.relu.default", "torch.ops.aten.relu.default"])
def test_every_spelling_of_an_op_reaches_the_converter(spelling):
    onx = tonnx.to_onnx(torch.nn.ReLU(), (torch.randn(3),), dispatcher=tonnx.Dispatcher({spelling: _relu_times(3.0)}))
    assert [n.op_type for n in onx.graph.node] == ["Relu", "Mul"]


@pytest.mark.parametrize(
    "key, message",
    [("aten::relu.defualt", "has no overload 'defualt'"), ("aten::reluu.default", "torch.ops.aten.reluu does not exist")],
)
def test_an_in_house_converter_for_no_op_is_refused_not_ignored(key, message):
    with pytest.raises(tonnx.TonnxError, match=message):
        tonnx.to_onnx(torch.nn.ReLU(), (torch.randn(3),), dispatcher=tonnx.Dispatcher({key: _relu_times(3.0)}))
