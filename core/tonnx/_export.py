"""``tonnx.to_onnx``: torch.export, then the interpreter, the basic passes and the proto."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

from . import _report
from ._errors import ExportFailedError, OutputFileError, TonnxError
from ._keyword_inputs import explicit_keyword_inputs

#: Models whose initializers exceed this are written with external data when saved, and
#: to_onnx(filename=) then returns a proto referencing the data file instead of holding it.
EXTERNAL_DATA_THRESHOLD = 2**31 - 2**26

#: protobuf cannot parse a message this large: a model file without external data is smaller.
PROTOBUF_LIMIT = 2**31


#: torch.onnx.export's default opset, so a model exported by either has the same ops.
DEFAULT_OPSET = 20

#: Where tonnx.export_program keeps the user's dimension names on the program it returns.
DIM_NAMES = "pkg.tonnx.dim_names"


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
    - ``target_opset``: main-domain opset (18 to 23, default 20 as torch.onnx), or ``{"": 23, "com.microsoft": 1}``.
    - ``dispatcher``: a :class:`tonnx.Dispatcher` with in-house converters, fallback packs
      or pack switches; the default one uses the installed packs and has no fallback.
    - ``optimize``: run the builder's passes (identity removal, folding, dead code).
    - ``validate``: check the converted graph against ONNX's schemas and torch's ranks and
      dtypes before returning it (a ``ConverterOutputError`` names the converter at fault).
    - ``filename``: also write the model there, atomically (a temporary file renamed over
      the path; a symlink is written through, an existing file keeps its mode; anything but
      a regular file is refused before torch.export). With ``external_data`` (default: when
      weights exceed 2 GB) initializers of 1 KiB or more go to ``<filename>.data`` or
      ``<filename>.1.data``: the name alternates on each overwrite, so a crash never pairs
      an old model with new data, and the other one is removed. Weights go from the tensors
      to the file without a copy. The proto returned is the model written, weights included
      (``onnx.save`` it anywhere); above 2 GB its large initializers reference the data file
      relative to ``filename``'s folder, as ``onnx.load(filename, load_external_data=False)``
      (one copy of the weights in memory). A killed export's temporaries
      (``<name>.tmp-tonnx-<pid>-<hex>``) are removed by the next export to the same path.
    - ``weights``: for a model built on the ``meta`` device, the safetensors files (a path,
      a glob or a list) its weights are read from, one tensor at a time, while writing
      ``filename``; tensor names are the model's ``state_dict`` names. With a data file, the
      proto returned references it whatever its size (the weights are never all in memory).
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
    filename = _path_argument(filename, "filename")
    _path_argument(report, "report")
    if filename is not None:
        _check_writable(filename)
    _check_report(report, filename)
    if weights is not None and filename is None:
        raise OutputFileError("weights= streams weights into a file: pass filename= too.")
    if weights is not None:
        _check_weights_kept(weights, filename, report)
    opsets = _opsets(target_opset)
    record = _report.ExportRecord() if report is not None else None
    # the packs' patches last until the names are read off the program's pytree specs
    with _report.recording(record, os.fspath(report) if report is not None else None), \
            _pack_export_patches(model, dispatcher, opsets[""]):
        if record is not None:
            record.start("export")
        ep, dim_names = export_program(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)
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
            from ._functions import finish

            onx = finish(onx, ep, export_modules_as_functions, inline=inline, filename=filename,
                         external_data=external_data, weights=weights)
    if verbose:
        from ._pretty import pretty

        print(pretty(onx))
    return onx


@contextlib.contextmanager
def _pack_export_patches(model, dispatcher, opset: int):
    """Enters the ``export_patches`` of the packs ``dispatcher`` enables (PackSpec)."""
    import torch

    from .dispatch._dispatcher import DEFAULT_DISPATCHER
    from .dispatch._manager import default_manager

    with contextlib.ExitStack() as stack:
        if not isinstance(model, torch.export.ExportedProgram):
            registry = default_manager().registry(opset, dispatcher if dispatcher is not None else DEFAULT_DISPATCHER)
            for spec in registry.packs.values():
                if spec is not None and spec.export_patches is not None:
                    stack.enter_context(spec.export_patches())
        yield


def _opsets(target_opset) -> dict[str, int]:
    if type(target_opset) is int:
        opsets = {"": target_opset}
    elif isinstance(target_opset, dict):
        opsets = dict(target_opset)
    else:
        raise TonnxError(
            f"target_opset={target_opset!r}: give an int (target_opset=20) or a dict of domain "
            f"versions ({{'': 20, 'com.microsoft': 1}})."
        )
    main_opset = opsets.setdefault("", DEFAULT_OPSET)
    bad = {d: v for d, v in opsets.items() if type(v) is not int or not isinstance(d, str)}
    if bad:
        raise TonnxError(f"target_opset: versions must be ints keyed by domain name, got {bad}.")
    if not 18 <= main_opset <= 23:
        raise TonnxError(f"target_opset={main_opset} is not supported; choose 18 to 23.")
    return opsets


def export_program(model, args: tuple, kwargs: dict, *, dynamic_shapes=None, strict=False):
    """(ExportedProgram, {torch symbol: user dimension name}) for a model or a program."""
    import torch

    from .interpreter import _dynamic_shapes

    if isinstance(model, torch.export.ExportedProgram):
        if dynamic_shapes is None and (args or kwargs):
            raise TonnxError(
                "to_onnx(ExportedProgram, args/kwargs) without dynamic_shapes: the program is "
                "already traced with its own inputs, so args/kwargs would be ignored. Drop them, "
                "pass dynamic_shapes to name the program's dynamic dimensions, or export the "
                "nn.Module instead."
            )
        if dynamic_shapes is None:
            return model, dict(model.graph_module.meta.get(DIM_NAMES, {}))
        return model, _dynamic_shapes.program_symbol_names(model, args, kwargs, dynamic_shapes)
    with explicit_keyword_inputs(model, kwargs):  # callers enter _pack_export_patches
        spec, named = _dynamic_shapes.convert(model, args, kwargs, dynamic_shapes)
        ep = _export(model, args, kwargs, spec, strict)
        return ep, _dynamic_shapes.symbol_names(ep, args, kwargs, named)


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
    record: _report.ExportRecord | None = None,
):
    """ExportedProgram -> ModelProto: everything to_onnx does after torch.export."""
    from ._io_names import io_names
    from ._metadata import graph_metadata
    from .builder import GraphBuilder
    from .dispatch._dispatcher import DEFAULT_DISPATCHER
    from .dispatch._manager import default_manager
    from .interpreter import _mutations
    from .interpreter._interpreter import Interpreter
    from .interpreter._values import ShapeNamer

    if record is not None:
        record.start("convert")
    dispatcher = dispatcher if dispatcher is not None else DEFAULT_DISPATCHER
    main_opset = opsets[""]
    if _mutations.needs_functionalization(ep.graph):
        ep = ep.run_decompositions({})

    manager = default_manager()
    registry = manager.registry(main_opset, dispatcher)
    config = manager.pack_config(dispatcher)
    for spec_ in registry.packs.values():
        if spec_ is not None:
            for domain, version in spec_.domains.items():
                opsets.setdefault(domain, version)
    g = GraphBuilder(opsets)
    input_names, output_names = io_names(ep, input_names, output_names)
    interpreter = Interpreter(
        g,
        registry,
        namer=ShapeNamer(dim_names),
        on_missing=lambda missing: dispatcher.on_missing(manager.not_found_error(missing, registry, config)),
        input_names=list(input_names or []),
        output_names=list(output_names or []),
    )
    if record is not None:
        record.attach(ep=ep, registry=registry, config=config, manager=manager, interpreter=interpreter)
    interpreter.run(ep)
    if validate:
        from .builder._validate import validate as validate_graph

        validate_graph(g)
    if record is not None:
        record.start("optimize")
    if optimize:
        g.optimize()
        _apply_pack_rewrites(g, registry, config)
    _drop_unused_domains(g)
    g.metadata_props["pkg.tonnx.packs"] = ", ".join(
        f"{n} {manager.versions.get(n, '')}".strip() for n in registry.packs if registry.packs[n]
    )
    if interpreter.fallback_ops:
        import warnings

        summary = ", ".join(f"{k} x{v}" for k, v in sorted(interpreter.fallback_ops.items()))
        g.metadata_props["pkg.tonnx.fallback_ops"] = summary
        # one warning per export: what a fallback pack converted is never silent
        warnings.warn(
            f"tonnx: {len(interpreter.fallback_ops)} op(s) converted by a fallback pack "
            f"(listed in the model's pkg.tonnx.fallback_ops metadata): {summary}",
            UserWarning,
            stacklevel=2,
        )
    g.metadata_props["pkg.torch.export.ExportedProgram.range_constraints"] = str(
        ep.range_constraints
    )
    g.metadata_props.update(graph_metadata(ep, interpreter, manager, g))
    if record is not None:
        record.start("serialize")
    model = g.to_onnx() if filename is None else _save(g, filename, external_data, weights)
    if record is not None:
        record.attach(model=model)
    return model


def _export(model, args, kwargs, dynamic_shapes, strict):
    import torch

    try:
        return torch.export.export(
            model, args, kwargs=kwargs, dynamic_shapes=dynamic_shapes, strict=strict
        )
    except Exception as e:
        raise ExportFailedError(
            f"torch.export.export could not trace the model (this is torch.export's failure, "
            f"not tonnx's; fix the model or the inputs, or pass an ExportedProgram): "
            f"{type(e).__name__}: {e}"
        ) from e


def _apply_pack_rewrites(g, registry, config) -> None:
    """Packs' multi-node rewrites (``PackSpec.rewrites``), run on the optimized graph,
    where patterns are canonical (identities gone, constants folded, shared subexpressions
    merged), then the two passes that clean up after them. Rules that fired are listed in
    the model's ``pkg.tonnx.rewrites`` metadata."""
    from .builder._rewrites import apply_rewrites
    from .dispatch._rewrite_table import enabled_rules

    rules = enabled_rules(registry, config)
    if not rules:
        return
    fired = apply_rewrites(g, rules)
    if fired:
        g.remove_identity_nodes()  # rules alias a result through Identity
        g.eliminate_common_subexpressions()
        g.remove_unused()
        g.metadata_props["pkg.tonnx.rewrites"] = ", ".join(f"{k} x{v}" for k, v in sorted(fired.items()))


def _drop_unused_domains(g) -> None:
    used = {n.domain for n in g.nodes}
    for domain in [d for d in g.opsets if d and d not in used]:
        del g.opsets[domain]


def _path_argument(path, what: str) -> str | None:
    """``filename=``/``report=`` as a str path (None stays None); anything else is refused."""
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise OutputFileError(f"{what}={path!r}: give a path, a str or a pathlib.Path ({what}='model.onnx').")
    return os.fspath(path)


def _check_writable(filename: str) -> None:
    """Fails before torch.export if ``filename`` cannot be written or is not a regular file
    (a probe file is made and removed, so nothing is left on disk); removes the temporaries
    a killed export to the same path left."""
    from .builder._file_writer import ModelFile

    files = ModelFile(filename)
    files.probe()
    files.clean_stale()


def _check_report(report, filename: str | None) -> None:
    """Fails before torch.export if ``report`` cannot be written or would replace the model
    or its data file (the report is written last, also when the export fails)."""
    if report is None:
        return
    from .builder._file_writer import ModelFile

    report = os.fspath(report)
    if filename is not None and ModelFile(filename).owns(report):
        raise OutputFileError(
            f"report={report!r} is the model {filename!r} or its data file: the report would "
            f"replace the model. Give the report its own name, e.g. report='report.md'."
        )
    ModelFile(report, what="report").probe(data_files=False)


def _check_weights_kept(weights, filename: str, report) -> None:
    """Fails before torch.export if the model, its data file or the report would replace a
    safetensors file of ``weights=`` (read while the model is written)."""
    from .builder._file_writer import ModelFile
    from .builder._weights import expand

    outputs = {"filename": ModelFile(filename)}
    if report is not None:
        outputs["report"] = ModelFile(os.fspath(report))
    for path in expand(weights):
        for what, files in outputs.items():
            if files.owns(path):
                raise OutputFileError(
                    f"{what}= would replace {path!r}, a safetensors file of weights= the model "
                    f"is read from: write the {'model' if what == 'filename' else 'report'} "
                    f"under another name."
                )


def _save(g, filename: str, external_data: bool | None, weights=None):
    from .builder import _file_writer
    from .builder._serialize import nbytes

    total = sum(nbytes(v) for v in g.constants.values())
    if external_data is None:
        external_data = total > EXTERNAL_DATA_THRESHOLD
    if not external_data and total >= PROTOBUF_LIMIT:
        raise OutputFileError(
            f"The initializers hold {total / 2**30:.2f} GiB, over protobuf's 2 GiB limit for a "
            f"model in one file: pass external_data=True (or leave it None) to write "
            f"{filename!r} with a data file."
        )
    payload = None
    if weights is not None:
        from .builder._weights import SafetensorsWeights

        source = weights if isinstance(weights, SafetensorsWeights) else SafetensorsWeights(weights)
        payload = source.payload
    # streamed weights= stay in their files: the proto references the data file
    return _file_writer.save(g, filename, external_data=external_data, payload=payload,
                             return_data=total <= EXTERNAL_DATA_THRESHOLD and weights is None)
