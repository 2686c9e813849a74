"""``to_onnx``'s arguments, checked before torch.export runs: the opsets, and the paths of
the model, its data file and the report (a bad path fails in a second, not after the trace)."""

from __future__ import annotations

import os

from tonnx._errors import OutputFileError, TonnxError

from tonnx._opsets import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, SUPPORTED_OPSETS  # noqa: F401


def opsets(target_opset) -> dict[str, int]:
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
    if main_opset not in SUPPORTED_OPSETS:
        raise TonnxError(f"target_opset={main_opset} is not supported; choose {MIN_OPSET} to {MAX_OPSET}.")
    return opsets


def path_argument(path, what: str) -> str | None:
    """``filename=``/``report=`` as a str path (None stays None); anything else is refused."""
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise OutputFileError(f"{what}={path!r}: give a path, a str or a pathlib.Path ({what}='model.onnx').")
    return os.fspath(path)


def check_writable(filename: str, *, external_data: bool | None = None) -> None:
    """Fails before torch.export if ``filename`` cannot be written or is not a regular file
    (a probe file is made and removed, so nothing is left on disk), or if its name, or with
    ``external_data=True`` its data file's, is over the filesystem's limit; removes the
    temporaries a killed export to the same path left."""
    from tonnx.pipeline.write._file_writer import ModelFile

    files = ModelFile(filename)
    files.probe(external_data=external_data is True)
    files.clean_stale()


def check_report(report, filename: str | None) -> None:
    """Fails before torch.export if ``report`` cannot be written or would replace the model
    or its data file (the report is written last, also when the export fails)."""
    if report is None:
        return
    from tonnx.pipeline.write._file_writer import ModelFile

    report = os.fspath(report)
    if filename is not None and ModelFile(filename).owns(report):
        raise OutputFileError(
            f"report={report!r} is the model {filename!r} or its data file: the report would "
            f"replace the model. Give the report its own name, e.g. report='report.md'."
        )
    ModelFile(report, what="report").probe(data_files=False)


def check_weights_kept(weights, filename: str, report) -> None:
    """Fails before torch.export if the model, its data file or the report would replace a
    safetensors file of ``weights=`` (read while the model is written)."""
    from tonnx.pipeline.write._file_writer import ModelFile
    from tonnx.pipeline.write._weights import expand

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
