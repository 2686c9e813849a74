"""PackSpec.export_patches: entered around torch.export while the pack is enabled, only then."""

from __future__ import annotations

import contextlib
import types

import pytest
import torch

import tonnx
from tonnx import PackSpec


class Doubler(torch.nn.Module):
    def forward(self, x):
        return x * 2


def _patching_pack(name: str, log: list):
    """A pack without converters whose patch makes Doubler triple, and logs enter/exit."""

    @contextlib.contextmanager
    def patches():
        log.append("enter")
        original = Doubler.forward
        Doubler.forward = lambda self, x: x * 3
        try:
            yield
        finally:
            Doubler.forward = original
            log.append("exit")

    module = types.SimpleNamespace()
    module.tonnx_pack = tonnx.hookimpl(lambda: PackSpec(name=name, load=lambda: [], export_patches=patches))
    return module


def _run(onx, x):
    from tonnx.testing import run_onnxruntime

    return run_onnxruntime(onx, [x.numpy()])[0]


def test_patches_are_entered_around_the_export_of_a_module_only():
    log: list = []
    pack = _patching_pack("tripler", log)
    x = torch.arange(4.0)
    onx = tonnx.to_onnx(Doubler(), (x,), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))
    assert log == ["enter", "exit"]
    assert _run(onx, x).tolist() == (x * 3).tolist()
    assert Doubler()(x).tolist() == (x * 2).tolist()  # eager code unchanged afterwards

    ep = torch.export.export(Doubler(), (x,))
    onx = tonnx.to_onnx(ep, dispatcher=tonnx.Dispatcher(extra_packs=[pack]))
    assert log == ["enter", "exit"]  # a program is already traced: nothing to patch
    assert _run(onx, x).tolist() == (x * 2).tolist()


def test_export_program_applies_them_as_to_onnx_does():
    """to_onnx(model, dispatcher=d) == convert(export_program(model, dispatcher=d), dispatcher=d)."""
    log: list = []
    dispatcher = tonnx.Dispatcher(extra_packs=[_patching_pack("tripler", log)])
    x = torch.arange(4.0)
    ep = tonnx.export_program(Doubler(), (x,), dispatcher=dispatcher)
    assert log == ["enter", "exit"]
    assert _run(tonnx.convert(ep, dispatcher=dispatcher), x).tolist() == (x * 3).tolist()


def test_a_blocked_pack_patches_nothing():
    log: list = []
    pack = _patching_pack("tripler", log)
    x = torch.arange(4.0)
    onx = tonnx.to_onnx(Doubler(), (x,), dispatcher=tonnx.Dispatcher(extra_packs=[pack], packs=["no:tripler"]))
    assert log == []
    assert _run(onx, x).tolist() == (x * 2).tolist()


def test_the_patch_is_undone_when_the_export_fails():
    log: list = []
    pack = _patching_pack("tripler", log)

    class Bad(torch.nn.Module):
        def forward(self, x):
            return Doubler()(x) if x.sum() > 0 else x  # data-dependent: torch.export fails

    with pytest.raises(tonnx.TonnxError):
        tonnx.to_onnx(Bad(), (torch.arange(4.0),), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))
    assert log == ["enter", "exit"]
    assert Doubler()(torch.ones(1)).item() == 2
