"""torchvision's detection models through ``torch.export``: the export patches and the
pack's op ``tonnx_torchvision::batched_nms``.

``torch.export`` stops at three data-dependent spots of ``torchvision.models.detection``;
while the pack is enabled, ``to_onnx`` exports with each replaced by code that gives the
same numbers on every input:

- ``torchvision.ops.batched_nms`` branches on the number of boxes (per class above 1000
  boxes on the CPU, else one nms on boxes shifted apart by class, which rounds
  differently): it becomes the op ``tonnx_torchvision::batched_nms``, whose eager kernel
  is torchvision's function itself and whose converter computes both branches and keeps
  the one torchvision's CPU kernel takes;
- ``MultiScaleRoIAlign`` pools each level's rois by indexing a tensor of as many rows as
  rois (``len`` of a data-dependent size): the patch pools every roi at every level and
  keeps, per roi, its level's result (``torch.where``), the same values;
- ``BoxCoder.decode`` tests ``box_sum > 0`` to reshape ``[N, 4 * C]`` codes: the patch
  reshapes with the static ``C``; only an empty box set gets another (empty) shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
import torchvision
from onnx import TensorProto
from torchvision.models.detection import _utils as detection_utils
from torchvision.ops import boxes as box_ops
from torchvision.ops import poolers

from tonnx import Converter

from .boxes import _require_float32, kept_positions, nms_threshold, sorted_for_nms

OP = "tonnx_torchvision::batched_nms"
#: torchvision's ``batched_nms`` runs one nms per class above this many coordinates (CPU)
_PER_CLASS_ABOVE = 4000
_BATCHED_NMS = box_ops.batched_nms
_DECODE = detection_utils.BoxCoder.decode


@torch.library.custom_op(OP, mutates_args=())
def batched_nms(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """torchvision's ``batched_nms``, as one op for ``torch.export``."""
    return _BATCHED_NMS(boxes, scores, idxs, iou_threshold)


@batched_nms.register_fake
def _(boxes, scores, idxs, iou_threshold):
    kept = torch.library.get_ctx().new_dynamic_size()
    return boxes.new_empty((kept,), dtype=torch.int64)


def _multiscale_roi_align(x_filtered, boxes, output_size, sampling_ratio, scales, mapper):
    """torchvision's ``_multiscale_roi_align`` without indexing by a data-dependent size."""
    if scales is None or mapper is None:
        raise ValueError("scales and mapper should not be None")
    rois = poolers._convert_to_roi_format(boxes)

    def pool(feature, scale):
        return torchvision.ops.roi_align(
            feature, rois, output_size=output_size, spatial_scale=scale, sampling_ratio=sampling_ratio
        )

    if len(x_filtered) == 1:
        return pool(x_filtered[0], scales[0])
    levels = mapper(boxes)[:, None, None, None]
    result = None
    for level, (feature, scale) in enumerate(zip(x_filtered, scales)):
        pooled = pool(feature, scale)
        result = torch.where(levels == level, pooled, torch.zeros_like(pooled) if result is None else result)
    return result


def _decode(self, rel_codes, boxes):
    """``BoxCoder.decode`` for ``[N, 4 * C]`` codes without testing ``N > 0``."""
    if rel_codes.dim() != 2:
        return _DECODE(self, rel_codes, boxes)
    concat_boxes = torch.cat(boxes, dim=0)
    pred_boxes = self.decode_single(rel_codes, concat_boxes)
    return pred_boxes.reshape(concat_boxes.shape[0], rel_codes.shape[1] // 4, 4)


@contextmanager
def export_patches() -> Iterator[None]:
    """During the export only: the three replacements of the module docstring."""
    saved = [
        (box_ops, "batched_nms", batched_nms),
        (torchvision.ops, "batched_nms", batched_nms),
        (poolers, "_multiscale_roi_align", _multiscale_roi_align),
        (detection_utils.BoxCoder, "decode", _decode),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in saved]
    try:
        for owner, name, patch in saved:
            setattr(owner, name, patch)
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


# -- the converter -----------------------------------------------------------------------------


def _coordinate_trick(g, boxes: str, scores: str, idxs: str, threshold) -> str:
    """torchvision's ``_batched_nms_coordinate_trick``: boxes shifted by
    ``idx * (max + 1)`` (NaN when a coordinate is), one nms."""
    flat = g.op.Concat(g.op.Reshape(boxes, [-1]), np.array([-np.inf], dtype=np.float32), axis=0)
    has_nan = g.op.ReduceMax(g.op.Cast(g.op.IsNaN(flat), to=TensorProto.FLOAT), keepdims=0)
    top = g.op.Where(g.op.Greater(has_nan, np.array(0.0, dtype=np.float32)), np.array(np.nan, dtype=np.float32),
                     g.op.ReduceMax(flat, keepdims=0))
    offsets = g.op.Mul(g.op.Cast(idxs, to=TensorProto.FLOAT), g.op.Add(top, np.array(1.0, dtype=np.float32)))
    shifted = g.op.Add(boxes, g.op.Unsqueeze(offsets, [1]))
    order, sorted_boxes, sorted_scores = sorted_for_nms(g, shifted, scores)
    positions = kept_positions(g, sorted_boxes, g.op.Unsqueeze(sorted_scores, [0]), threshold)
    return g.op.Gather(order, positions, axis=0)


def _range(g, size: str) -> str:
    """``0, 1, ..., size - 1`` for a 1-element int64 size."""
    one = np.array(1, dtype=np.int64)
    return g.op.Range(np.array(0, dtype=np.int64), g.op.Squeeze(size, [0]), one)


def _per_class(g, boxes: str, scores: str, idxs: str, threshold) -> str:
    """torchvision's ``_batched_nms_vanilla``: one nms per class (NonMaxSuppression's
    classes, each seeing only its boxes), the kept boxes in torchvision's order."""
    order, sorted_boxes, _ = sorted_for_nms(g, boxes, scores)
    count = g.op.Shape(scores)
    values, _, classes, _ = g.op.Unique(
        g.op.Gather(idxs, order, axis=0), sorted=1,
        outputs=[g.unique_name(f"classes_{i}") for i in range(4)],
    )
    known = _range(g, g.op.Shape(values))
    member = g.op.Equal(g.op.Unsqueeze(known, [1]), g.op.Unsqueeze(classes, [0]))
    # visiting order = position: key -position, boxes of other classes below the threshold
    key = g.op.Neg(g.op.Cast(_range(g, count), to=TensorProto.FLOAT))
    class_scores = g.op.Where(member, g.op.Unsqueeze(key, [0]), np.array(-np.inf, dtype=np.float32))
    lowest = np.array([np.finfo(np.float32).min], dtype=np.float32)
    positions = kept_positions(g, sorted_boxes, class_scores, threshold, lowest)
    kept = g.op.ScatterElements(
        g.op.Expand(np.array([0], dtype=np.int8), count), positions,
        g.op.Expand(np.array([1], dtype=np.int8), g.op.Shape(positions)), axis=0,
    )
    kept = g.op.Cast(kept, to=TensorProto.BOOL)
    return g.op.Gather(order, g.op.Reshape(g.op.NonZero(kept), [-1]), axis=0)


# tonnx_torchvision::batched_nms.default
def torchvision_batched_nms(g, sts, outputs, boxes, scores, idxs, iou_threshold):
    "batched_nms(Tensor boxes, Tensor scores, Tensor idxs, float iou_threshold) -> Tensor"
    _require_float32("batched_nms", sts)
    threshold = nms_threshold("batched_nms", iou_threshold)
    shifted = _coordinate_trick(g, boxes, scores, idxs, threshold)
    per_class = _per_class(g, boxes, scores, idxs, threshold)
    # torchvision takes the per-class branch above 4000 coordinates (CPU): keep its result
    first = g.op.Shape(shifted)
    both = g.op.Add(first, g.op.Shape(per_class))
    large = g.op.Greater(g.op.Mul(g.op.Shape(boxes, start=0, end=1), np.array([4], dtype=np.int64)),
                         np.array([_PER_CLASS_ABOVE], dtype=np.int64))
    start = g.op.Where(large, first, np.array([0], dtype=np.int64))
    end = g.op.Where(large, both, first)
    return g.op.Slice(g.op.Concat(shifted, per_class, axis=0), start, end, [0], outputs=outputs)


CONVERTERS = (Converter(f"{OP}.default", torchvision_batched_nms),)
