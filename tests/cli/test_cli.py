"""The ``tonnx`` command run as a user runs it (subprocesses), failure paths and exit codes."""

from __future__ import annotations

import os
import subprocess
import sys

import onnx
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(HERE, "cli_targets.py")


def tonnx(*args, cwd=None):
    """Runs ``python -m tonnx ARGS`` (what the ``tonnx`` script runs)."""
    return subprocess.run([sys.executable, "-m", "tonnx", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_export_verify_report_show(tmp_path):
    out, report = str(tmp_path / "mlp.onnx"), str(tmp_path / "report.md")
    r = tonnx("export", f"{TARGETS}:mlp", "-o", out, "--dynamic", "x=0:batch", "--verify",
              "--report", report)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and "verify (onnxruntime vs torch" in r.stdout
    assert "linear_1: float32[4, 2] max abs diff" in r.stdout and "(ok)" in r.stdout
    assert r.stderr == ""  # not a terminal: no progress bar
    model = onnx.load(out)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    text = open(report).read()
    assert "# tonnx export report: succeeded" in text
    for phase in ("export", "convert", "optimize", "serialize"):
        assert f"| {phase} | " in text
    assert "| aten | 3 | 2 | `aten::linear.default` x2, `aten::relu.default` x1 |" in text
    shown = tonnx("show", out)
    assert shown.returncode == 0
    assert "  x: FLOAT[batch, 3]" in shown.stdout
    assert "  a.weight: FLOAT[8, 3]" in shown.stdout
    assert "linear = Gemm(x, a.weight, a.bias; transB=1)  # aten:tonnx_aten.linalg.aten_linear" in shown.stdout


def test_export_module_name_dict_and_kwargs_forms(tmp_path):
    out = str(tmp_path / "d.onnx")
    r = tonnx("export", "cli_targets:mlp_dict", "-o", out, "--verify", "--quiet", cwd=HERE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("verify") and "scores:" in r.stdout
    model = onnx.load(out)
    assert [i.name for i in model.graph.input] == ["features"]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"



def test_export_kwargs_form_in_process(tmp_path, capsys):
    from tonnx.cli import main

    out = str(tmp_path / "two.onnx")
    assert main(["export", f"{TARGETS}:two_inputs", "-o", out, "--verify", "--opset", "18"]) == 0
    assert capsys.readouterr().out.count("(ok)") == 2
    assert onnx.load(out).opset_import[0].version == 18


def test_missing_converters_exit_3_and_report(tmp_path):
    report = str(tmp_path / "report.md")
    r = tonnx("export", f"{TARGETS}:missing_converter", "-o", str(tmp_path / "m.onnx"),
              "--report", report)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "ConverterNotFoundError" in r.stderr and "tonnx_cli_test::mystery.default" in r.stderr
    assert not os.path.exists(tmp_path / "m.onnx")
    text = open(report).read()
    assert "# tonnx export report: FAILED" in text
    assert "| convert (failed here) |" in text
    assert "## Packs consulted, in priority order" in text and "| aten |" in text
    assert "### `tonnx_cli_test::mystery.default`: 2 node(s): `mystery`, `mystery_1`" in text
    assert "cli_targets.py\", line" in text  # the user's line
    assert "Dispatcher(converters={'tonnx_cli_test::mystery.default': my_converter})" in text


def test_export_failed_exit_4_report_points_at_user_code(tmp_path):
    report = str(tmp_path / "report.md")
    r = tonnx("export", f"{TARGETS}:export_fails", "-o", str(tmp_path / "m.onnx"),
              "--report", report)
    assert r.returncode == 4, (r.stdout, r.stderr)
    assert "ExportFailedError" in r.stderr
    text = open(report).read()
    assert "| export (failed here) |" in text
    assert "### Where in your code" in text and "if x.sum() > 0" in text


def test_verification_failed_exit_5(tmp_path):
    r = tonnx("export", f"{TARGETS}:verify_fails", "-o", str(tmp_path / "v.onnx"), "--verify")
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert "FAILED" in r.stdout and "max abs diff" in r.stdout


USAGE_ERRORS = [
    (["export", "no_colon", "-o", "x.onnx"], "expected MODULE_OR_FILE:CALLABLE"),
    (["export", "does_not_exist.py:f", "-o", "x.onnx"], "does not exist"),
    (["export", "no_such_module_xyz:f", "-o", "x.onnx"], "not found"),
    (["export", f"{TARGETS}:nope", "-o", "x.onnx"], "has no attribute 'nope'"),
    (["export", f"{TARGETS}:not_a_tuple", "-o", "x.onnx"], "returned MLP"),
    (["export", f"{TARGETS}:raises", "-o", "x.onnx"], "cannot build the model today"),
    (["export", f"{TARGETS}:mlp", "-o", "x.onnx", "--dynamic", "x"], "expected NAME=AXIS"),
    (["export", f"{TARGETS}:mlp", "-o", "x.onnx", "--dynamic", "x=a"], "is not an integer"),
    (["export", f"{TARGETS}:mlp", "-o", "x.onnx", "--dynamic", "nosuch=0"], "not arguments"),
    (["export", f"{TARGETS}:mlp_dict", "-o", "x.onnx", "--dynamic", "x=0"], "use one"),
    (["export", f"{TARGETS}:mlp", "-o", "x.onnx", "--pack", "nosuchpack"], "nosuchpack"),
    (["export", f"{TARGETS}:mlp", "-o", "x.onnx", "--pack", "aten=abc"], "priority must be an integer"),
    (["export", f"{TARGETS}:mlp", "-o", "x.onnx", "--pack", "aten", "--no-pack", "aten"], "both name pack 'aten'"),
    (["export", f"{TARGETS}:mlp", "-o", "x.onnx", "--opset", "99"], "invalid choice"),
    (["export", f"{TARGETS}:mlp"], "-o/--output"),
    (["show", "nothing.onnx"], "is not a file"),
    (["show", TARGETS], "cannot read"),
]


def test_bad_usage_exit_2_in_a_subprocess(tmp_path):
    """Two usage errors as a shell sees them (the others run in-process below, faster)."""
    for argv, message in (USAGE_ERRORS[0], USAGE_ERRORS[10]):
        r = tonnx(*argv, cwd=str(tmp_path))
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert message in r.stderr
    assert not os.path.exists(tmp_path / "x.onnx")


@pytest.mark.parametrize("argv, message", USAGE_ERRORS)
def test_bad_usage_exit_2(tmp_path, monkeypatch, capsys, argv, message):
    from tonnx.cli import main

    monkeypatch.chdir(tmp_path)
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's own errors
        code = e.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x.onnx")


def test_version_lists_libraries_and_packs():
    r = tonnx("--version")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith("tonnx ")
    for name in ("torch", "onnx", "onnxruntime"):
        assert any(line.startswith(f"{name} ") for line in lines)
    assert any(line.startswith("pack aten ") for line in lines)


def test_demo(tmp_path):
    """As README's demo command runs it: without the test dependencies (hypothesis, pytest)."""
    code = ("import sys; sys.modules['hypothesis'] = sys.modules['pytest'] = None; "
            "from tonnx.cli import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, "demo", "-o", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout, r.stderr)
    for name in ("transformer", "cnn"):
        path = tmp_path / "out" / f"{name}.onnx"
        assert f"{name}: exported in" in r.stdout and str(path) in r.stdout
        onnx.checker.check_model(str(path))
    assert r.stdout.count("(ok)") == 4 and "FAILED" not in r.stdout


def test_progress_bar_draws_only_where_asked():
    import io

    from tonnx.tools.cli._progress import Progress
    from tonnx.tools.report._record import ExportRecord

    record = ExportRecord()
    progress = Progress(record, stream=io.StringIO())
    assert not progress.enabled  # a StringIO is not a terminal
    record.start("export")
    assert "export" in progress.line()
    stream = io.StringIO()
    with Progress(record, enabled=True, stream=stream):
        import time

        time.sleep(0.35)
    assert "tonnx [" in stream.getvalue() and "export" in stream.getvalue()


def test_progress_bar_on_a_terminal(tmp_path):
    """stderr a terminal: the bar is drawn (and cleared); not a terminal: nothing (tested above)."""
    import pty

    def stderr_on_a_tty(*extra):
        master, slave = pty.openpty()
        proc = subprocess.run(
            [sys.executable, "-m", "tonnx", "export", f"{TARGETS}:mlp", "-o",
             str(tmp_path / "p.onnx"), *extra],
            stdout=subprocess.PIPE, stderr=slave, timeout=300,
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the pty is drained
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
        assert proc.returncode == 0
        return b"".join(chunks).decode(errors="replace")

    drawn = stderr_on_a_tty()
    assert "tonnx [" in drawn and "export" in drawn


def test_fallback_named_by_the_report_fixes_the_export(tmp_path):
    report = str(tmp_path / "r.md")
    out = str(tmp_path / "a.onnx")
    r = tonnx("export", f"{TARGETS}:needs_fallback", "-o", out, "--report", report, "-q")
    assert r.returncode == 3 and r.stdout == ""
    assert "`tonnx export ... --fallback onnxscript`" in open(report).read()
    r = tonnx("export", f"{TARGETS}:needs_fallback", "-o", out, "--fallback", "onnxscript", "--verify")
    assert r.returncode == 0, r.stderr
    assert "(ok)" in r.stdout
    meta = {p.key: p.value for p in onnx.load(out).metadata_props}
    assert "aten::angle.default (onnxscript)" in meta["pkg.tonnx.fallback_ops"]
