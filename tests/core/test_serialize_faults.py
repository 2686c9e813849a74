"""A process killed while writing a model, or between the renames of a model and its data."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tonnx.pipeline.write import _file_writer

# a child writing a 64 MB model (16 tensors of 4 MB, 20 ms per tensor) over an existing file;
# MODE is "inline" or "external"; CRASH_AT_SWITCH exits at once when the .onnx switch comes
CHILD = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    from onnx import TensorProto
    from tonnx.builder import GraphBuilder
    from tonnx.pipeline.write import _file_writer
    from tonnx.builder._proto import tensor_bytes

    path, mode, crash_at_switch = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (1024,))
    y = "x"
    for i in range(16):
        y = g.op.Add(y, g.make_initializer(f"w{i}", np.full((1024, 1024), i + 100, np.float32)))
    g.make_tensor_output(y, TensorProto.FLOAT, (1024, 1024))

    def slow(name, value):
        print("writing", name, flush=True)
        time.sleep(0.02)
        return tensor_bytes(value)

    real_replace = os.replace
    def replace(src, dst):
        if crash_at_switch and dst == path:
            os._exit(3)  # dies like SIGKILL: no cleanup
        real_replace(src, dst)
    _file_writer.os.replace = replace
    _file_writer.save(g, path, external_data=mode == "external", payload=slow)
    """
)


def _old_model(path: str, external: bool) -> dict[str, str]:
    from tonnx.builder import GraphBuilder

    g = GraphBuilder(18)
    g.make_tensor_input("x", onnx.TensorProto.FLOAT, (1024,))
    g.make_tensor_output(g.op.Add("x", g.make_initializer("w0", np.ones((512, 512), np.float32))),
                         onnx.TensorProto.FLOAT, (512, 512))
    _file_writer.save(g, path, external_data=external)
    return _digests(os.path.dirname(path))


def _digests(folder) -> dict[str, str]:
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def _child(path: str, mode: str, crash_at_switch: bool) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, path, mode, "1" if crash_at_switch else "0"],
        stdout=subprocess.PIPE,
        text=True,
    )


def _assert_old_model_loads(path: str) -> None:
    loaded = onnx.load(path)
    (init,) = loaded.graph.initializer
    np.testing.assert_array_equal(numpy_helper.to_array(init), np.ones((512, 512), np.float32))


@pytest.mark.parametrize("mode", ["inline", "external"])
def test_sigkill_while_writing_keeps_the_old_file_and_next_write_cleans(tmp_path, mode):
    path = str(tmp_path / "m.onnx")
    before = _old_model(path, mode == "external")
    proc = _child(path, mode, crash_at_switch=False)
    for _ in range(6):  # a few tensors are in the temporary file
        assert proc.stdout.readline().startswith("writing")
    proc.kill()
    proc.wait()
    assert proc.returncode == -9
    leftovers = sorted(set(os.listdir(tmp_path)) - set(before))
    assert leftovers and all(".tmp-tonnx-" in name for name in leftovers), leftovers
    assert {k: v for k, v in _digests(tmp_path).items() if k in before} == before
    _assert_old_model_loads(path)
    # the next write to the same path removes the dead process's temporaries
    _old_model(path, mode == "external")
    assert not [n for n in os.listdir(tmp_path) if ".tmp-tonnx-" in n]
    _assert_old_model_loads(path)


def test_process_dying_between_the_renames_never_pairs_new_data_with_old_model(tmp_path):
    path = str(tmp_path / "m.onnx")
    before = _old_model(path, external=True)
    proc = _child(path, "external", crash_at_switch=True)
    proc.communicate()
    assert proc.returncode == 3
    # the new data file got its final name, but under a name the old model does not use
    assert sorted(os.listdir(tmp_path))[:3] == ["m.onnx", "m.onnx.1.data", "m.onnx.data"]
    assert {k: v for k, v in _digests(tmp_path).items() if k in before} == before
    _assert_old_model_loads(path)
    # the complete write after it: one consistent pair, nothing else
    proc = _child(path, "external", crash_at_switch=False)
    proc.communicate()
    assert proc.returncode == 0
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnx.1.data"]
    loaded = onnx.load(path)
    assert [int(numpy_helper.to_array(t)[0, 0]) for t in loaded.graph.initializer] == list(range(100, 116))
