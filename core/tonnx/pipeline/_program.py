"""The two phases of ``to_onnx`` as public functions: capture, then convert.

``export_program`` runs torch.export (with tonnx's ``dynamic_shapes`` forms: a string names
a dimension, and the export patches of the packs the dispatcher enables) and returns the
``ExportedProgram``, which can be inspected, saved, or changed before ``convert`` turns it
into ONNX. ``to_onnx(model, ..., dispatcher=d)`` is exactly
``convert(export_program(model, ..., dispatcher=d), ..., dispatcher=d)``. The torch.compile backends and
``tonnx.testing`` use these two.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

from tonnx.pipeline._arguments import DEFAULT_OPSET
from tonnx.pipeline.capture._torch_export import DIM_NAMES, pack_export_patches


def export_program(
    model: Any,
    args: tuple = (),
    kwargs: dict | None = None,
    *,
    dynamic_shapes: Any = None,
    strict: bool = False,
    dispatcher: Any = None,
):
    """Phase 1: ``torch.export.export`` of ``model``; returns the ``ExportedProgram``.

    ``dynamic_shapes`` accepts what :func:`tonnx.to_onnx` accepts; the dimension names
    given as strings travel with the program (in ``graph_module.meta``), so
    :func:`tonnx.convert` names the ONNX dimensions after them. The export patches of the
    packs ``dispatcher`` enables (the installed ones by default) apply, as in ``to_onnx``.
    Raises :class:`tonnx.ExportFailedError` when torch.export cannot trace the model.
    """
    from tonnx.pipeline.capture._torch_export import export_program as capture

    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    with pack_export_patches(model, dispatcher, DEFAULT_OPSET):
        ep, names = capture(model, args, dict(kwargs or {}), dynamic_shapes=dynamic_shapes, strict=strict)
    ep.graph_module.meta[DIM_NAMES] = dict(names)
    return ep


@contextlib.contextmanager
def export_patches(*, dispatcher: Any = None) -> Iterator[None]:
    """The export patches of the packs ``dispatcher`` enables (the installed ones by default),
    for the block: what ``to_onnx`` applies, around your own ``torch.export.export`` call::

        with tonnx.export_patches():
            ep = torch.export.export(model, (), kwargs={"input_ids": ids,
                                     "past_key_values": DynamicCache(...)})

    The transformers pack's, for example, make cache classes pytree nodes and run the eager
    experts loop of mixture-of-experts models over every expert. Nested use is allowed. The
    block holds tonnx's export lock: exports in other threads wait until it ends.
    """
    with pack_export_patches(None, dispatcher, DEFAULT_OPSET):
        yield


def convert(
    program: Any,
    *,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    target_opset: int | dict[str, int] = DEFAULT_OPSET,
    dispatcher: Any = None,
    optimize: bool = True,
    filename: str | os.PathLike | None = None,
    external_data: bool | None = None,
    verbose: int = 0,
    report: str | os.PathLike | None = None,
    **options: Any,
):
    """Phase 2: an ``ExportedProgram`` (from :func:`export_program` or torch.export) to ONNX.

    The keywords are :func:`tonnx.to_onnx`'s (``options`` passes the others through).
    """
    import torch

    from tonnx._errors import TonnxError

    if not isinstance(program, torch.export.ExportedProgram):
        raise TonnxError(
            f"tonnx.convert takes an ExportedProgram, got {type(program).__name__}: capture "
            f"it first with tonnx.export_program(model, args), or call tonnx.to_onnx(model, args)."
        )
    from tonnx.pipeline._to_onnx import to_onnx

    return to_onnx(
        program,
        input_names=input_names,
        output_names=output_names,
        target_opset=target_opset,
        dispatcher=dispatcher,
        optimize=optimize,
        filename=filename,
        external_data=external_data,
        verbose=verbose,
        report=report,
        **options,
    )
