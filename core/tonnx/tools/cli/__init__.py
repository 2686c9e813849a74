"""Subcommands of ``tonnx`` beyond ``packs``/``explain``: export, demo, show, --version.

``tonnx.cli.main`` builds the parser and calls :func:`add_commands`; each module here owns
one command (its arguments and its ``run``), and ``_codes`` the exit codes.
"""

from __future__ import annotations

from tonnx.tools.cli import _demo, _export_cmd, _show


def add_commands(parser, sub) -> None:
    """Adds ``--version`` to ``parser`` and the export, demo and show commands to ``sub``."""
    parser.add_argument("--version", action=_show.VersionAction,
                        help="print tonnx, torch, onnx, onnxruntime and pack versions")
    _export_cmd.add_parser(sub)
    _demo.add_parser(sub)
    _show.add_show_parser(sub)
