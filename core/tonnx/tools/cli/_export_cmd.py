"""``tonnx export MODULE_OR_FILE:CALLABLE -o model.onnx``: the export as a CI step."""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from tonnx._opsets import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, SUPPORTED_OPSETS
from tonnx.tools.cli import _codes, _target

EPILOG = f"""\
The callable: {_target.CONTRACT}.

Exit codes: {_codes.OK} exported (and verified), {_codes.FAILED} conversion failed,
{_codes.USAGE} bad usage (arguments, target, callable contract, unknown pack),
{_codes.MISSING_CONVERTERS} ops without a converter, {_codes.EXPORT_FAILED} torch.export failed,
{_codes.VERIFY_FAILED} verification failed, {_codes.INTERRUPTED} interrupted (Ctrl-C).

Example: tonnx export mymodels.py:make_mlp -o mlp.onnx --dynamic x=0:batch --verify
"""


def add_parser(sub) -> None:
    p = sub.add_parser(
        "export", help="export a model returned by a Python callable",
        description="Export the model a callable returns to ONNX.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", metavar="MODULE_OR_FILE:CALLABLE")
    p.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    p.add_argument("--opset", type=int, default=DEFAULT_OPSET, choices=SUPPORTED_OPSETS,
                   metavar="N", help=f"main-domain opset, {MIN_OPSET} to {MAX_OPSET} (default {DEFAULT_OPSET})")
    p.add_argument("--dynamic", action="append", default=[], metavar="NAME=AXIS[:DIM]",
                   help="make an axis of forward's argument NAME dynamic, named DIM "
                        "(e.g. x=0:batch, ids=0:batch,1:seq); repeatable")
    p.add_argument("--pack", action="append", default=[], metavar="NAME[=PRIORITY]",
                   help="enable a pack, optionally at a priority; repeatable")
    p.add_argument("--no-pack", action="append", default=[], metavar="NAME",
                   help="block a pack; repeatable")
    p.add_argument("--fallback", action="append", default=[], metavar="PACK",
                   help="enable a fallback pack (e.g. onnxscript); repeatable")
    p.add_argument("--verify", action="store_true",
                   help="run the model in onnxruntime and compare each output with torch")
    p.add_argument("--atol", type=float, default=1e-4, help="--verify tolerance (default 1e-4)")
    p.add_argument("--rtol", type=float, default=1e-4, help="--verify tolerance (default 1e-4)")
    p.add_argument("--report", metavar="FILE", help="write a markdown report (also on failure)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    p.set_defaults(run=run)


def _error(message: str) -> None:
    print(f"tonnx export: {message}", file=sys.stderr)


def run(args) -> int:
    try:
        target = _target.load(args.target)
        dynamic_shapes = _target.parse_dynamic(args.dynamic, target)
    except _target.TargetError as e:
        _error(str(e))
        return _codes.USAGE
    except Exception:
        traceback.print_exc()
        _error(f"loading {args.target!r} raised (see above); {_target.CONTRACT}.")
        return _codes.USAGE
    from tonnx._errors import TonnxError
    from tonnx.pipeline._arguments import check_report

    try:  # before the export: a report that cannot be written cannot tell why it failed
        check_report(args.report, args.output)
    except TonnxError as e:
        _error(f"{type(e).__name__}: {e}")
        return _codes.of_error(e)
    try:
        onx, record = _export(args, target, dynamic_shapes)
    except TonnxError as e:
        _error(f"{type(e).__name__}: {e}")
        if args.report:
            _error(f"report written to {args.report}")
        return _codes.of_error(e)
    if not args.quiet:
        print(_summary(args.output, onx, record))
        if args.report:
            print(f"report: {args.report}")
    if args.verify:
        return _verify(args, target, onx)
    return _codes.OK


def _export(args, target, dynamic_shapes):
    from tonnx import Dispatcher
    from tonnx.pipeline._arguments import check_writable, opsets as parse_opsets
    from tonnx.pipeline._to_onnx import convert_program
    from tonnx.pipeline.capture._torch_export import export_program, pack_export_patches
    from tonnx.tools.report._record import ExportRecord
    from tonnx.tools.report._recording import recording
    from tonnx.tools.cli._progress import Progress

    dispatcher = Dispatcher(
        fallback=args.fallback, packs=[*args.pack, *(f"no:{n}" for n in args.no_pack)]
    )
    output = os.fspath(args.output)
    record = ExportRecord()
    with Progress(record, enabled=False if args.quiet else None), recording(record, args.report):
        check_writable(output)
        opsets = parse_opsets(args.opset)
        with pack_export_patches(target.model, dispatcher, opsets[""]):  # as to_onnx
            record.start("export")
            ep, dim_names = export_program(
                target.model, target.args, target.kwargs, dynamic_shapes=dynamic_shapes
            )
            onx = convert_program(
                ep, dim_names, opsets=opsets, dispatcher=dispatcher,
                input_names=target.input_names, output_names=target.output_names,
                filename=output, record=record,
            )
    return onx, record


def _summary(output: str, onx, record) -> str:
    size = os.path.getsize(output) / 2**20
    phases = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in record.timings.items())
    return (f"wrote {output} ({size:.2f} MB): {len(onx.graph.node)} nodes, "
            f"{len(onx.graph.initializer)} initializers, in {sum(record.timings.values()):.2f} s "
            f"({phases})")


def _verify(args, target, onx) -> int:
    from tonnx.tools.cli._verify import verify

    checks = verify(args.output, onx, target.model, target.args, target.kwargs, atol=args.atol, rtol=args.rtol)
    ok = all(c.ok for c in checks)
    print(f"verify (onnxruntime vs torch, atol={args.atol:g}, rtol={args.rtol:g}): "
          f"{'ok' if ok else 'FAILED'}")
    for check in checks:
        print(check.line())
    return _codes.OK if ok else _codes.VERIFY_FAILED
