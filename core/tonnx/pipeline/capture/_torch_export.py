"""Step 1, capture: the model traced by torch.export, with tonnx's dynamic-shape forms
(a string names a dimension), keyword inputs made explicit and the packs' export patches."""

from __future__ import annotations

import contextlib
import threading

from tonnx._errors import ExportFailedError, TonnxError
from tonnx.pipeline.capture import _dynamic_shapes
from tonnx.pipeline.capture._export_failure import export_failure_message
from tonnx.pipeline.capture._kept_inputs import kept_inputs
from tonnx.pipeline.capture._keyword_inputs import explicit_keyword_inputs
from tonnx.pipeline.capture._specialized import specialized_dimension_error

#: Where tonnx.export_program keeps the user's dimension names on the program it returns.
DIM_NAMES = "pkg.tonnx.dim_names"

#: Held while a thread traces or converts a program (re-entrant: to_onnx calls
#: export_program). torch.export's tracing state is process-wide (the fake mode, dynamo's
#: config and guards, the decompositions' dispatch), and so are the packs' export patches
#: (module attributes replaced for the block) and ``model.forward`` made explicit: two
#: threads exporting at once break each other inside torch. Exports run one at a time.
EXPORT_LOCK = threading.RLock()


@contextlib.contextmanager
def pack_export_patches(model, dispatcher, opset: int):
    """Enters the ``export_patches`` of the packs ``dispatcher`` enables (PackSpec), holding
    :data:`EXPORT_LOCK` for the block."""
    import torch

    from tonnx.dispatch._dispatcher import DEFAULT_DISPATCHER
    from tonnx.dispatch._manager import default_manager

    with EXPORT_LOCK, contextlib.ExitStack() as stack:
        if not isinstance(model, torch.export.ExportedProgram):
            registry = default_manager().registry(opset, dispatcher if dispatcher is not None else DEFAULT_DISPATCHER)
            for spec in registry.packs.values():
                if spec is not None and spec.export_patches is not None:
                    stack.enter_context(spec.export_patches())
        yield


def export_program(model, args: tuple, kwargs: dict, *, dynamic_shapes=None, strict=False):
    """(ExportedProgram, {torch symbol: user dimension name}) for a model or a program."""
    import torch

    from tonnx.pipeline.capture import _dynamic_shapes

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
    # callers enter pack_export_patches (the lock included); the lock again for direct calls
    with EXPORT_LOCK, kept_inputs(model, args, kwargs), explicit_keyword_inputs(model, kwargs):
        spec, named = _dynamic_shapes.convert(model, args, kwargs, dynamic_shapes)
        ep = _torch_export(model, args, kwargs, spec, strict, named)
        return ep, _dynamic_shapes.symbol_names(ep, args, kwargs, named)


def _torch_export(model, args, kwargs, dynamic_shapes, strict, named: list):
    import torch

    try:
        return torch.export.export(
            model, args, kwargs=kwargs, dynamic_shapes=dynamic_shapes, strict=strict
        )
    except Exception as e:
        specialized = specialized_dimension_error(e, named)
        if specialized is not None:
            raise specialized from e
        raise ExportFailedError(export_failure_message(e)) from e
