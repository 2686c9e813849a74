"""torch.compile backends that run each captured graph as ONNX (inference only).

``torch.compile(model, backend=tonnx.backends.onnx_custom_backend)``: every graph dynamo
captures (one per piece between graph breaks) is exported with tonnx and run by
onnxruntime; ``onnx_debug_backend`` runs it with onnx's reference evaluator instead (slow,
but every ONNX op is plain Python a converter author can step through).

A graph is converted when first called with a given set of input shapes and dtypes
(the ONNX model is static per set, cached), so dynamo's symbolic sizes need no special
handling. Gradients are not supported: use these backends under ``torch.no_grad()``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["onnx_custom_backend", "onnx_debug_backend", "OnnxGraph"]


def onnx_custom_backend(gm, example_inputs: Sequence[Any], **options: Any) -> Callable:
    """A ``torch.compile`` backend: each captured graph runs in onnxruntime.

    ``options`` (via ``torch.compile(..., options={...})``) go to :func:`tonnx.convert`
    (``target_opset``, ``dispatcher``, ...).
    """
    return OnnxGraph(gm, runtime="onnxruntime", options=options)


def onnx_debug_backend(gm, example_inputs: Sequence[Any], **options: Any) -> Callable:
    """A ``torch.compile`` backend: each captured graph runs in onnx's ReferenceEvaluator.

    The evaluator has the installed packs' kernels for their custom domains
    (``tonnx.testing.ExtendedReferenceEvaluator``); ``new_ops`` in ``options`` are more
    ``onnx.reference.op_run.OpRun`` classes; the other options go to :func:`tonnx.convert`.
    """
    return OnnxGraph(gm, runtime="reference", options=options)


class OnnxGraph:
    """One captured FX graph; converted to ONNX per input signature, then run there."""

    def __init__(self, gm, *, runtime: str, options: dict):
        self.gm = gm
        self.runtime = runtime
        self.options = dict(options)
        self.new_ops = list(self.options.pop("new_ops", ()))
        #: signature -> (runner, output spec); inspect ``models`` for the ONNX protos
        self._compiled: dict[tuple, tuple[Callable, Any]] = {}
        self.models: dict[tuple, Any] = {}

    def __call__(self, *args):
        import torch

        key = tuple(
            (tuple(a.shape), a.dtype, a.device.type) if isinstance(a, torch.Tensor) else (type(a), a)
            for a in args
        )
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compile(key, args)
            self._compiled[key] = compiled
        run, out_spec = compiled
        feeds = [_numpy(a) for a in args if isinstance(a, torch.Tensor)]
        results = [torch.from_numpy(r) for r in run(feeds)]
        return torch.utils._pytree.tree_unflatten(results, out_spec)

    def _compile(self, key: tuple, args: tuple):
        import torch

        from tonnx._errors import TonnxError
        from tonnx.pipeline._program import convert, export_program

        with torch.no_grad():
            ep = export_program(self.gm, args)
        onx = convert(ep, **self.options)
        self.models[key] = onx
        out_spec = ep.call_spec.out_spec
        if out_spec.num_leaves != len(onx.graph.output):
            raise TonnxError(
                f"The captured graph returns {out_spec.num_leaves} values but its ONNX model "
                f"has {len(onx.graph.output)} outputs (a non-tensor output cannot be an ONNX "
                f"output); graph:\n{self.gm.code}"
            )
        return self._runner(onx), out_spec

    def _runner(self, onx) -> Callable:
        names = [i.name for i in onx.graph.input]
        if self.runtime == "onnxruntime":
            import onnxruntime

            session = onnxruntime.InferenceSession(
                onx.SerializeToString(), providers=["CPUExecutionProvider"]
            )
            return lambda feeds: session.run(None, dict(zip(names, feeds)))
        from tonnx.authoring._reference import ExtendedReferenceEvaluator

        evaluator = ExtendedReferenceEvaluator(onx, new_ops=[*_reference_fixes(), *self.new_ops])
        return lambda feeds: evaluator.run(None, dict(zip(names, feeds)))


def _numpy(tensor):
    from tonnx.builder._constants import as_numpy

    array = as_numpy(tensor.detach().cpu())
    return array if array.flags.c_contiguous else array.copy(order="C")


def _reference_fixes() -> list:
    """Kernels replacing onnx reference ones that compute wrong results.

    onnx 1.23's GatherElements returns one value per row for a 2-D input whose index is
    narrower than the data (BERT's position ids), so it is replaced by take_along_axis.
    """
    import numpy as np
    from onnx.reference.op_run import OpRun

    class GatherElements(OpRun):
        op_domain = ""

        def _run(self, data, indices, axis=None):
            axis = 0 if axis is None else axis
            indices = np.where(indices < 0, indices + data.shape[axis], indices)
            return (np.take_along_axis(data, indices, axis=axis),)

    return [GatherElements]
