"""``tonnx.to_onnx``, the whole pipeline in order: capture -> prepare -> interpret -> finish -> write.

Each step is a package of ``tonnx.pipeline``; this module only calls them in turn.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tonnx._errors import OutputFileError
from tonnx.pipeline._arguments import (
    DEFAULT_OPSET,
    check_report,
    check_weights_kept,
    check_writable,
    opsets as parse_opsets,
    path_argument,
)
from tonnx.pipeline.capture._torch_export import EXPORT_LOCK, export_program, pack_export_patches
from tonnx.tools.report import _record
from tonnx.tools.report._recording import recording


def to_onnx(
    model: Any,
    args: tuple = (),
    kwargs: dict | None = None,
    *,
    dynamic_shapes: Any = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    target_opset: int | dict[str, int] = DEFAULT_OPSET,
    dispatcher: Any = None,
    optimize: bool = True,
    validate: bool = True,
    filename: str | os.PathLike | None = None,
    external_data: bool | None = None,
    weights: Any = None,
    strict: bool = False,
    verbose: int = 0,
    report: str | os.PathLike | None = None,
    export_modules_as_functions: Any = False,
    inline: bool = False,
):
    """Exports ``model`` (an ``nn.Module`` or an ``ExportedProgram``) to ``onnx.ModelProto``.

    - ``dynamic_shapes``: as for ``torch.export.export``; a dimension may also be given as
      a string (``{0: "batch"}``), which also names it in the ONNX model.
    - ``target_opset``: main-domain opset (18 to 26, default 20 as torch.onnx), or ``{"": 23, "com.microsoft": 1}``.
    - ``dispatcher``: a :class:`tonnx.Dispatcher` with in-house converters, fallback packs
      or pack switches; the default one uses the installed packs and has no fallback.
    - ``optimize``: run the builder's passes (identity removal, folding, dead code).
    - ``validate``: check the converted graph against ONNX's schemas and torch's ranks and
      dtypes before returning it (a ``ConverterOutputError`` names the converter at fault).
    - ``filename``: also write the model there, atomically (a temporary file renamed over
      the path; a symlink is written through, an existing file keeps its mode; anything but
      a regular file, or a name longer than the filesystem's NAME_MAX, is refused before
      torch.export). With ``external_data`` (default: when weights exceed 2 GB) initializers
      of 1 KiB or more go to ``<filename>.data`` or ``<filename>.1.data``: the name
      alternates on each overwrite, so a crash never pairs an old model with new data, and
      the other one is removed. Weights go from the tensors to the file without a copy, and
      the proto returned holds no copy of them: each initializer of 1 KiB or more
      references its bytes in the file written (the data file, or the ``.onnx`` itself), as
      ``onnx.load(filename, load_external_data=False)`` gives a model with external data.
      ``onnx.load(filename)`` gives the whole model; ``onnx.load_external_data_for_model(onx,
      folder)`` fills this proto (``folder``: ``filename``'s, its target's for a symlink).
      A KeyboardInterrupt or SIGTERM during the write removes the temporaries; a killed
      export's (``<name>.tmp-tonnx-<pid>-<hex>``) are removed by the next export to the path.
    - ``weights``: for a model built on the ``meta`` device, the safetensors files (a path,
      a glob or a list) its weights are read from, one tensor at a time, while writing
      ``filename`` (a tensor stored as the model declares it is copied file to file by the
      kernel); tensor names are the model's ``state_dict`` names (the weights are never
      all in memory).
    - ``strict``: passed to ``torch.export.export``.
    - ``verbose``: 1 prints the model as :func:`tonnx.pretty` text after the export.
    - ``report``: also write a markdown report there (written on failure too: the failing
      op and its source line, every op lacking a converter and how to enable one; on
      success the ops each pack converted and the time of each phase); checked before
      torch.export like ``filename`` and never the model or its data file.
    - ``export_modules_as_functions``: ``True`` or a set of module classes: each instance
      becomes a call to an ONNX local function, one function per distinct class and body
      (weights are function inputs); ``inline=True`` inlines them back (a check).
    """
    kwargs = dict(kwargs or {})
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    filename = path_argument(filename, "filename")
    path_argument(report, "report")
    if filename is not None:
        check_writable(filename, external_data=external_data)
    check_report(report, filename)
    if weights is not None and filename is None:
        raise OutputFileError("weights= streams weights into a file: pass filename= too.")
    if weights is not None:
        check_weights_kept(weights, filename, report)
    opsets = parse_opsets(target_opset)
    record = _record.ExportRecord() if report is not None else None
    # the packs' patches last until the names are read off the program's pytree specs
    with recording(record, os.fspath(report) if report is not None else None), \
            pack_export_patches(model, dispatcher, opsets[""]):
        if record is not None:
            record.start("export")
        # 1. capture
        ep, dim_names = export_program(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)
        # 2. prepare, 3. interpret, 4. finish, 5. write
        onx = convert_program(
            ep,
            dim_names,
            opsets=opsets,
            input_names=input_names,
            output_names=output_names,
            dispatcher=dispatcher,
            optimize=optimize,
            validate=validate,
            filename=None if export_modules_as_functions else filename,
            external_data=external_data,
            weights=weights,
            record=record,
        )
        if export_modules_as_functions:
            from tonnx.pipeline.finish._functions import finish

            onx = finish(onx, ep, export_modules_as_functions, inline=inline, filename=filename,
                         external_data=external_data, weights=weights)
    if verbose:
        from tonnx.tools._pretty import pretty

        print(pretty(onx))
    return onx


def convert_program(
    ep,
    dim_names: dict[str, str],
    *,
    opsets: dict[str, int],
    input_names=None,
    output_names=None,
    dispatcher=None,
    optimize: bool = True,
    validate: bool = True,
    filename: str | None = None,
    external_data: bool | None = None,
    weights: Any = None,
    record: _record.ExportRecord | None = None,
):
    """ExportedProgram -> ModelProto: everything to_onnx does after torch.export (steps 2-5)."""
    from tonnx.dispatch._dispatcher import DEFAULT_DISPATCHER
    from tonnx.pipeline.finish._finish import finish_graph
    from tonnx.pipeline.interpret._program import interpret_program
    from tonnx.pipeline.prepare._program import prepare_program
    from tonnx.pipeline.write._save import save

    if record is not None:
        record.start("convert")
    dispatcher = dispatcher if dispatcher is not None else DEFAULT_DISPATCHER
    with EXPORT_LOCK:  # run_decompositions traces again; the packs are loaded once
        ep, manager, registry, config = prepare_program(ep, dispatcher, opsets)  # 2. prepare
        g, interpreter = interpret_program(  # 3. interpret
            ep, dim_names, opsets=opsets, registry=registry, manager=manager, config=config,
            dispatcher=dispatcher, input_names=input_names, output_names=output_names, record=record,
        )
        finish_graph(g, ep, interpreter, registry, config, manager,  # 4. finish
                     optimize=optimize, validate=validate, record=record)
    if record is not None:
        record.start("serialize")
    model = g.to_onnx() if filename is None else save(g, filename, external_data, weights)  # 5. write
    if record is not None:
        record.attach(model=model)
    return model
