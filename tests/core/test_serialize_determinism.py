"""The same model exported twice, in one process and in two, gives byte-identical files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

EXPORT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    import torch
    import tonnx
    from tests.models import transformer_models, vision_nets

    def export(name, filename):
        if name == "llama":
            model, args = transformer_models.llama()
            shapes = ({{0: "batch", 1: "seq"}}, {{0: "batch", 1: "seq"}})
        else:
            model, args = vision_nets.resnet18(), (torch.rand(2, 3, 32, 32),)
            shapes = ({{0: "batch"}},)
        tonnx.to_onnx(model, args, dynamic_shapes=shapes, filename=filename)

    for name, filename in zip(sys.argv[1::2], sys.argv[2::2]):
        export(name, filename)
    """
).format(root=ROOT)


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_two_exports_in_one_process_and_one_in_another_are_identical(tmp_path):
    names = ["llama", "cnn"]
    argv = [x for n in names for x in (n, str(tmp_path / f"{n}-c.onnx"))]
    # another process (started first, it runs beside this one), another hash seed: orders
    # that depend on hashing or on the process's history would show
    env = dict(os.environ, PYTHONHASHSEED="12345")
    child = subprocess.Popen([sys.executable, "-c", EXPORT, *argv], env=env)
    namespace: dict = {}
    exec(EXPORT.replace("for name, filename in", "for name, filename in [] and"), namespace)
    export = namespace["export"]
    for name in names:
        export(name, str(tmp_path / f"{name}-a.onnx"))
        export(name, str(tmp_path / f"{name}-b.onnx"))
    assert child.wait(timeout=300) == 0
    for name in names:
        a = _read(tmp_path / f"{name}-a.onnx")
        assert len(a) > 10_000
        assert a == _read(tmp_path / f"{name}-b.onnx"), f"{name}: two exports in one process differ"
        assert a == _read(tmp_path / f"{name}-c.onnx"), f"{name}: the export in another process differs"


@pytest.mark.parametrize("external", [False, True])
def test_external_data_pair_is_deterministic(tmp_path, external):
    import torch

    import tonnx
    from tests.models import vision_nets

    model, x = vision_nets.resnet18(), torch.rand(1, 3, 32, 32)
    ep = torch.export.export(model, (x,))
    for folder in ("a", "b"):
        os.mkdir(tmp_path / folder)
        tonnx.to_onnx(ep, filename=tmp_path / folder / "m.onnx", external_data=external)
    assert sorted(os.listdir(tmp_path / "a")) == sorted(os.listdir(tmp_path / "b"))
    for name in os.listdir(tmp_path / "a"):
        assert _read(tmp_path / "a" / name) == _read(tmp_path / "b" / name), name
