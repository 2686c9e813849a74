"""``tonnx show model.onnx`` and ``tonnx --version``."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys

from tonnx.tools.cli import _codes


def add_show_parser(sub) -> None:
    p = sub.add_parser("show", help="print a model as readable text (tonnx.pretty)")
    p.add_argument("model", help="an .onnx file")
    p.add_argument("--max-nodes", type=int, default=None, help="print at most this many nodes")
    p.set_defaults(run=run_show)


class NotAnOnnxModelError(Exception):
    """The file parses as protobuf but holds no ONNX model (an empty file, a text file)."""


def load_model(path: str):
    """The ``onnx.ModelProto`` in ``path`` (external data not loaded). Protobuf reads an
    empty file, or bytes that happen to be valid fields, as an empty message: a model
    without an IR version and a graph is refused, not shown as an empty model."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    if model.ir_version < 1 or not model.HasField("graph"):
        what = ("an empty file" if os.path.getsize(path) == 0
                else "no graph" if model.ir_version >= 1 else "no IR version")
        raise NotAnOnnxModelError(
            f"{path!r} is not an ONNX model ({what}): give a file written by onnx.save, "
            f"tonnx export or tonnx.to_onnx(..., filename=...)."
        )
    return model


def run_show(args) -> int:
    from tonnx.tools._pretty import pretty

    if not os.path.isfile(args.model):
        print(f"tonnx show: {args.model!r} is not a file.", file=sys.stderr)
        return _codes.USAGE
    try:
        text = pretty(load_model(args.model), max_nodes=args.max_nodes)
    except NotAnOnnxModelError as e:
        print(f"tonnx show: {type(e).__name__}: {e}", file=sys.stderr)
        return _codes.USAGE
    except Exception as e:  # not an ONNX file: say so, no traceback
        print(f"tonnx show: cannot read {args.model!r} as ONNX: {type(e).__name__}: {e}",
              file=sys.stderr)
        return _codes.USAGE
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `tonnx show m.onnx | head`: the reader had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return _codes.OK


def version_text() -> str:
    """tonnx, torch, onnx, onnxruntime and every pack with its version, one per line."""
    import tonnx

    lines = [f"tonnx {tonnx.__version__}"]
    for dist in ("torch", "onnx", "onnxruntime", "onnxscript"):
        try:
            lines.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            lines.append(f"{dist} not installed")
    from tonnx.dispatch._manager import diagnostic_manager
    from tonnx.tools.cli._packs import failure_lines

    manager = diagnostic_manager()
    for name, spec in sorted(manager.specs.items()):
        if name not in manager.failures:
            kind = " (fallback)" if spec.fallback else ""
            lines.append(f"pack {name} {manager.versions[name]}{kind}")
    return "\n".join([*lines, *failure_lines(manager)])


class VersionAction(argparse.Action):
    """``--version``: prints :func:`version_text` (packs are loaded only when asked)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help=kwargs.get("help"))

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        sys.stdout.flush()  # a closed pipe (`| head -2`) raises here, where main() catches it
        parser.exit(0)
