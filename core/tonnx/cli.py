"""The ``tonnx`` command: ``export``, ``demo``, ``show``, ``packs``, ``explain``, ``coverage``,
``--version``.

Every command ends in an exit code of ``tonnx.tools.cli._codes`` (docs/cli.md), never in a
traceback for what the user can fix: a tonnx error is printed as one message with its fix,
Ctrl-C as one line (exit 130), for every command, the packs' (``export-llm``) included.
"""

from __future__ import annotations

import argparse
import os
import sys

from tonnx.tools.cli import _codes, _explain, _packs, add_commands
from tonnx.tools.cli._pack_commands import add_pack_commands


def _coverage(args) -> int:
    from tonnx.tools._coverage import CoverageError, coverage_report

    try:
        text, status = coverage_report(args.tests, args.pack)
    except CoverageError as e:
        print(f"tonnx coverage: {e}", file=sys.stderr)
        return _codes.USAGE
    print(text)
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tonnx", description="Fast PyTorch to ONNX export.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_commands(parser, sub)  # export, demo, show, --version (tonnx.tools.cli)
    _packs.add_parser(sub)
    _explain.add_parser(sub)
    add_pack_commands(sub)  # the packs' own commands (PackSpec.commands)
    coverage = sub.add_parser(
        "coverage", help="per installed pack: the keys it registers and those its tests cover"
    )
    coverage.add_argument(
        "tests", nargs="*", default=["tests"],
        help="test folders or files; a test module lists the keys it checks in a COVERS set",
    )
    coverage.add_argument("--pack", action="append", help="only this pack (repeatable)")
    coverage.set_defaults(run=_coverage)
    return parser


def main(argv: list[str] | None = None) -> int:
    from tonnx._errors import TonnxError

    command = "tonnx"
    try:
        args = _parser().parse_args(argv)
        command = f"tonnx {args.command}"
        status = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except TonnxError as e:  # a bad TONNX_* variable, a broken pack: the message is the fix
        print(f"{command}: {type(e).__name__}: {e}", file=sys.stderr)
        return _codes.of_error(e)
    except BrokenPipeError:  # `tonnx --version | head -2`: the reader had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _codes.OK
    except KeyboardInterrupt:  # Ctrl-C: the writers' temporaries went on the way up
        print(f"{command}: interrupted", file=sys.stderr)
        return _codes.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
