"""onnx's reference evaluator extended with the installed packs' kernels for their domains.

A pack emitting nodes of its own ONNX domain contributes, through
``PackSpec.reference_kernels``, ``onnx.reference.op_run.OpRun`` classes that run them, so
a model using the domain can be checked against torch without onnxruntime.
"""

from __future__ import annotations

from onnx.reference import ReferenceEvaluator

from tonnx._errors import PackLoadError


def reference_kernels(packs=None) -> list:
    """The kernels of the installed packs (or of the packs named in ``packs``), validated."""
    from onnx.reference.op_run import OpRun

    from tonnx.dispatch._manager import default_manager

    manager = default_manager()
    kernels = []
    for name, spec in sorted(manager.specs.items()):
        if spec.reference_kernels is None or (packs is not None and name not in packs):
            continue
        try:
            found = list(spec.reference_kernels())
        except Exception as e:
            raise PackLoadError(f"Pack {name!r} failed to load its reference kernels: {type(e).__name__}: {e}") from e
        for kernel in found:
            if not (isinstance(kernel, type) and issubclass(kernel, OpRun)):
                raise PackLoadError(f"Pack {name!r}: reference kernel {kernel!r} is not an onnx.reference.op_run.OpRun subclass.")
            domain = getattr(kernel, "op_domain", "")
            if domain not in spec.domains:
                raise PackLoadError(
                    f"Pack {name!r}: reference kernel {kernel.__name__} has op_domain {domain!r}, "
                    f"not one of the pack's domains {sorted(spec.domains)} (PackSpec.domains)."
                )
        kernels.extend(found)
    return kernels


class ExtendedReferenceEvaluator(ReferenceEvaluator):
    """``onnx.reference.ReferenceEvaluator`` with the installed packs' kernels added.

    ``new_ops`` are more kernels (an in-house test's); ``packs`` restricts the packs whose
    kernels are used (default: every installed pack).
    """

    def __init__(self, model, *, new_ops=(), packs=None, **kwargs):
        super().__init__(model, new_ops=[*reference_kernels(packs), *new_ops], **kwargs)
