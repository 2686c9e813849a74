"""`tonnx packs` and `tonnx explain` show where packs come from, and ties, without crashing."""

from __future__ import annotations

import subprocess
import sys
import types

import tonnx
from tonnx import cli
from tonnx._opsets import DEFAULT_OPSET
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


# -- issue 21 section 3: a broken pack is reported by the commands that diagnose packs ------------

import os  # noqa: E402
import textwrap  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from tonnx.dispatch import _config  # noqa: E402


def _installed_broken_packs(folder):
    """A distribution 'brokenpack' with two packs: one raising on import, one in load()."""
    info = folder / "brokenpack-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenpack\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tonnx.packs]\nbroken = tonnx_brokenimport\nlazy = tonnx_brokenload\n")
    (folder / "tonnx_brokenimport.py").write_text("raise ImportError('no module named missing_dep')\n")
    (folder / "tonnx_brokenload.py").write_text(textwrap.dedent("""\
        import tonnx

        def _load():
            raise RuntimeError("lazy boom")

        @tonnx.hookimpl
        def tonnx_pack():
            return tonnx.PackSpec(name="lazy", load=_load)
        """))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}


def _run(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_broken_packs_are_reported_by_packs_version_and_explain(tmp_path):
    env = _installed_broken_packs(tmp_path)
    packs = _run("-m", "tonnx", "packs", env=env)
    assert "Traceback" not in packs.stderr and packs.returncode == 1, packs.stderr
    rows = {line.split()[0]: line for line in packs.stdout.splitlines() if line.strip()}
    assert "FAILED" in rows["broken"] and "brokenpack" in rows["broken"]
    assert "FAILED" in rows["lazy"] and "brokenpack" in rows["lazy"] and "lazy boom" not in rows["lazy"]
    assert "enabled" in rows["aten"]
    assert "ImportError: no module named missing_dep" in packs.stdout
    assert "its load() raised RuntimeError: lazy boom" in packs.stdout
    assert "TONNX_PACKS='no:broken'" in packs.stdout and "TONNX_PACKS='no:lazy'" in packs.stdout
    version = _run("-m", "tonnx", "--version", env=env)
    assert version.returncode == 0 and "Traceback" not in version.stderr, version.stderr
    assert "pack aten " in version.stdout and "'broken' (distribution 'brokenpack') FAILED" in version.stdout
    explain = _run("-m", "tonnx", "explain", "aten::relu.default", env=env)
    assert explain.returncode == 0 and "Traceback" not in explain.stderr, explain.stderr
    assert "winner: tonnx_aten.unary.aten_relu" in explain.stdout
    assert "no:broken" in explain.stderr and "no:lazy" in explain.stderr


def _lazy_broken_pack():
    def load():
        raise RuntimeError("lazy boom")

    def tonnx_pack():
        return tonnx.PackSpec(name="lazy", load=load)

    return types.SimpleNamespace(tonnx_pack=tonnx.hookimpl(tonnx_pack), __name__="lazy")


def _manager_with(monkeypatch, plugin, *, strict):
    manager = _manager.PackManager(strict=strict)
    manager.register(plugin)
    monkeypatch.setattr(_manager, "_DEFAULT", [manager])
    return manager


def test_a_pack_whose_load_raises_is_skipped_when_not_strict(monkeypatch):
    _manager_with(monkeypatch, _lazy_broken_pack(), strict=False)
    with pytest.warns(_manager.PackLoadWarning, match=r"lazy boom.*no:lazy"):
        onx = tonnx.to_onnx(torch.nn.ReLU(), (torch.randn(3),))
    assert [n.op_type for n in onx.graph.node] == ["Relu"]
    assert tonnx.to_onnx(torch.nn.ReLU(), (torch.randn(3),), target_opset=18) is not None  # warned once


def test_a_pack_whose_load_raises_names_the_fix_when_strict(monkeypatch):
    _manager_with(monkeypatch, _lazy_broken_pack(), strict=True)
    for _ in range(2):  # every export says it, not only the first
        with pytest.raises(tonnx.PackLoadError, match=r"lazy boom.*TONNX_PACKS='no:lazy'.*TONNX_STRICT_PACKS=0"):
            tonnx.to_onnx(torch.nn.ReLU(), (torch.randn(3),))
    assert tonnx.to_onnx(torch.nn.ReLU(), (torch.randn(3),), dispatcher=tonnx.Dispatcher(packs=["no:lazy"]))


def test_a_folder_named_like_a_pack_module_is_named_as_the_cause(tmp_path):
    (tmp_path / "tonnx_aten").mkdir()  # an output folder, say
    code = "import torch, tonnx; tonnx.to_onnx(torch.nn.ReLU(), (torch.randn(3),))"
    r = _run("-c", code, cwd=tmp_path)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "does not implement tonnx_pack()" in last
    assert str(tmp_path / "tonnx_aten") in last and "namespace package" in last
    assert "shadows the installed pack" in last and "current directory" in last
    assert os.path.join("plugins", "tonnx_aten", "__init__.py") in last  # where the real one is


# -- environment switches, parsed one way --------------------------------------------------------


@pytest.mark.parametrize("raw, value", [("1", True), ("true", True), (" YES ", True), ("On", True),
                                        ("0", False), ("false", False), ("No", False), (" off", False)])
def test_boolean_switches_read_one_way(monkeypatch, raw, value):
    monkeypatch.setenv("TONNX_STRICT_PACKS", raw)
    monkeypatch.setenv("TONNX_DISABLE_PACK_AUTOLOAD", raw)
    assert _config.strict_loading() is value
    assert _config.autoload_disabled() is value


@pytest.mark.parametrize("variable", ["TONNX_STRICT_PACKS", "TONNX_DISABLE_PACK_AUTOLOAD"])
def test_a_switch_that_is_not_a_boolean_is_refused(monkeypatch, variable):
    monkeypatch.setenv(variable, "maybe")
    with pytest.raises(tonnx.PackLoadError, match=f"{variable}='maybe' is not a boolean"):
        _manager.PackManager()


def test_pack_items_are_trimmed_and_contradictions_refused(monkeypatch):
    monkeypatch.setenv("TONNX_PACKS", " aten = 130 , no: onnxscript ")
    config = _config.from_environment()
    assert config.priorities == (("aten", 130),) and config.blocked == {"onnxscript"}
    monkeypatch.setenv("TONNX_PACKS", "no:aten,aten")
    with pytest.raises(tonnx.PackLoadError, match="TONNX_PACKS: 'no:aten' and 'aten' both name pack 'aten'"):
        _config.from_environment()
    with pytest.raises(tonnx.PackLoadError, match="'no:aten' and 'aten=5' both name"):
        tonnx.Dispatcher(packs=["no:aten", "aten=5"])
    with pytest.raises(tonnx.PackLoadError, match="priority must be an integer"):
        tonnx.Dispatcher(packs=["aten=abc"])


def test_a_bad_environment_is_a_message_and_exit_2_not_a_traceback(monkeypatch, capsys):
    monkeypatch.setattr(_manager, "_DEFAULT", [])
    monkeypatch.setenv("TONNX_STRICT_PACKS", "maybe")
    assert cli.main(["packs"]) == 2
    assert "TONNX_STRICT_PACKS='maybe' is not a boolean" in capsys.readouterr().err


def test_version_into_a_closed_pipe_is_quiet():
    proc = subprocess.Popen([sys.executable, "-m", "tonnx", "--version"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader (`| head -2`) is gone before tonnx writes
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, err
    assert "BrokenPipeError" not in err and "Traceback" not in err


# -- tonnx explain resolves what people type --------------------------------------------------


@pytest.mark.parametrize("typed, expect", [
    ("torch.add", "aten::add.Tensor: tonnx_aten.elementwise.aten_add from pack 'aten'"),
    ("scaled_dot_product_attention", "aten::scaled_dot_product_attention.default at opset"),
    ("torch.nn.functional.scaled_dot_product_attention", "aten::scaled_dot_product_attention.default at opset"),
])
def test_explain_resolves_python_names(capsys, typed, expect):
    assert cli.main(["explain", typed]) == 0
    assert expect in capsys.readouterr().out


@pytest.mark.parametrize("typed, message", [
    ("aten::add.Tensr", "aten::add has no overload 'Tensr'. Did you mean aten::add.Tensor?"),
    ("aten::no_such_op.default", "there is no op aten::no_such_op in this torch"),
    ("no_such_op", "'no_such_op' is not an op of this torch"),
    ("scaled_dot_product_atention", "Did you mean aten::scaled_dot_product_attention"),
])
def test_explain_says_when_an_op_does_not_exist(capsys, typed, message):
    assert cli.main(["explain", typed]) == 2
    assert message in capsys.readouterr().err


def test_explain_refuses_an_opset_export_refuses(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["explain", "aten::relu.default", "--opset", "99"])
    assert info.value.code == 2 and "invalid choice: 99" in capsys.readouterr().err


# -- tonnx coverage: a wrong pack or path is a usage error ---------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["coverage", "tests", "--pack", "nosuch"], "no installed pack named 'nosuch'"),
    (["coverage", "/nonexistent"], "no such test folder or file: /nonexistent"),
])
def test_coverage_refuses_what_does_not_exist(capsys, argv, message):
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_explain_of_an_op_no_pack_converts_says_so_for_its_default_overload(capsys):
    assert cli.main(["explain", "torch.kthvalue"]) == 1
    out = capsys.readouterr().out
    assert f"aten::kthvalue.default at opset {DEFAULT_OPSET}:\n  no converter in the enabled packs" in out
