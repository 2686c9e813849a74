"""tonnx-torchvision: torchvision's own ops (``torchvision::nms``, ``roi_align``,
``roi_pool``, ``ps_roi_align``, ``deform_conv2d``) as standard ONNX ops.

Each converter emits the ONNX op whose onnxruntime CPU kernel computes what torchvision's
CPU kernel computes (``NonMaxSuppression``, ``RoiAlign``, ``MaxRoiPool``, ``DeformConv``;
``ps_roi_align`` is ``RoiAlign`` over every channel and a gather of each bin's channel),
with the inputs rewritten where the two kernels differ (see each module). A case neither
can compute as torchvision does is refused with :class:`TorchvisionOpError`, which names
the op, the case and why. Its export patches (:mod:`.detection`) take
``torchvision.models.detection`` models through ``torch.export``. Importing this module
stays cheap (no torch, no torchvision).
"""

from __future__ import annotations

from tonnx import PackSpec, hookimpl

from ._errors import TorchvisionOpError

__all__ = ["TorchvisionOpError", "tonnx_pack"]
__version__ = "0.1.0"


def _load() -> list:
    from . import boxes, deform, detection, roi

    return [*boxes.CONVERTERS, *roi.CONVERTERS, *deform.CONVERTERS, *detection.CONVERTERS]


def _export_patches():
    from .detection import export_patches

    return export_patches()


@hookimpl
def tonnx_pack() -> PackSpec:
    return PackSpec(
        name="torchvision",
        load=_load,
        version=__version__,
        priority=150,
        description="torchvision::nms, roi_align, roi_pool, ps_roi_align, deform_conv2d as standard ONNX ops; detection models",
        export_patches=_export_patches,
    )
