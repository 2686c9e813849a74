"""``torchvision::nms`` as ONNX ``NonMaxSuppression``, with the inputs rewritten so that
onnxruntime's kernel keeps exactly the boxes torchvision's CPU kernel keeps, in its order.

Where the two kernels differ, and what the graph does about it:

- order: torchvision visits boxes by ``scores.sort(descending=True)`` (NaN first);
  onnxruntime by score, ties by lower index, and NaN breaks its ordering. The graph sorts
  the boxes itself (two stable ``TopK``: by score, then NaN first) and hands
  onnxruntime the sorted boxes with NaN scores as +inf, which it then visits in that
  order. Ties follow the lower index, as ``torch.sort(stable=True)`` does; torchvision's
  kernel calls the non-stable sort, which agrees for up to 16 boxes and orders ties among
  more boxes by ``std::sort``'s partitioning (torchvision documents that tied boxes may
  differ between devices);
- boxes with ``x1 > x2``, ``y1 > y2`` or a NaN coordinate: torchvision computes a zero or
  NaN overlap with every other box, so such a box never suppresses nor is suppressed;
  onnxruntime would reorder its corners. The graph replaces it by an empty box at the
  origin, which onnxruntime also never matches;
- the threshold: torchvision compares the float32 overlap with the float64 threshold;
  onnxruntime with a float32 one. The graph passes the largest float32 not above it
  (the same comparison for every float32 overlap), 1.0 for a threshold above 1 or NaN
  (no overlap exceeds 1, no comparison with NaN holds). A negative threshold suppresses
  boxes that do not overlap in torchvision and is refused (onnxruntime rejects it).
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from tonnx import Converter

from ._errors import TorchvisionOpError

_INT64_MAX = np.iinfo(np.int64).max


def _float32_threshold(op: str, iou_threshold: float) -> float:
    """The float32 ``t`` with ``overlap > t`` exactly when ``overlap > iou_threshold``."""
    if math.isnan(iou_threshold) or iou_threshold >= 1.0:
        return 1.0
    if iou_threshold < 0.0:
        raise TorchvisionOpError(
            op, f"iou_threshold={iou_threshold}", "a negative threshold makes torchvision "
            "suppress boxes that do not overlap, and onnxruntime's NonMaxSuppression accepts "
            "thresholds in [0, 1] only", "Use a threshold in [0, 1].",
        )
    t = np.float32(iou_threshold)
    if float(t) > iou_threshold:
        t = np.nextafter(t, np.float32(-np.inf))
    return float(t)


def _two(g, stem: str) -> list[str]:
    return [g.unique_name(f"{stem}_values"), g.unique_name(f"{stem}_indices")]


def _stable_order(g, scores: str) -> str:
    """Indices sorting ``scores`` as ``torch.sort(descending=True, stable=True)``: NaN
    first, then by decreasing score, ties by increasing index (``TopK`` is stable)."""
    count = g.op.Shape(scores)
    is_nan = g.op.IsNaN(scores)
    by_score = g.op.Where(is_nan, np.array(-np.inf, dtype=np.float32), scores)
    _, order = g.op.TopK(by_score, count, axis=0, largest=1, sorted=1, outputs=_two(g, "nms_order"))
    nan_first = g.op.Gather(g.op.Cast(is_nan, to=TensorProto.FLOAT), order, axis=0)
    _, then = g.op.TopK(nan_first, count, axis=0, largest=1, sorted=1, outputs=_two(g, "nms_nan_first"))
    return g.op.Gather(order, then, axis=0)


def _isolated_as_empty(g, boxes: str) -> str:
    """Boxes torchvision never matches (inverted corners, NaN) as ``[0, 0, 0, 0]``."""
    x1, y1, x2, y2 = (g.op.Slice(boxes, [i], [i + 1], [1]) for i in range(4))
    valid = g.op.And(g.op.LessOrEqual(x1, x2), g.op.LessOrEqual(y1, y2))
    return g.op.Where(valid, boxes, np.array(0.0, dtype=np.float32))


def _require_float32(op: str, sts) -> None:
    if sts.input_dtypes[0] != TensorProto.FLOAT or sts.input_dtypes[1] != TensorProto.FLOAT:
        raise TorchvisionOpError(
            op, f"boxes and scores of ONNX type {sts.input_dtypes[0]}, {sts.input_dtypes[1]}",
            "onnxruntime's NonMaxSuppression computes overlaps in float32 and torchvision in "
            "the input's type", "Cast boxes and scores to float32 before nms.",
        )


def sorted_for_nms(g, dets: str, scores: str) -> tuple[str, str, str]:
    """``(order, boxes, scores)``: torchvision's visiting order, and the boxes and scores
    in that order as onnxruntime's NonMaxSuppression must see them to follow it."""
    order = _stable_order(g, scores)
    no_nan = g.op.Where(g.op.IsNaN(scores), np.array(np.inf, dtype=np.float32), scores)
    return order, g.op.Gather(_isolated_as_empty(g, dets), order, axis=0), g.op.Gather(no_nan, order, axis=0)


def nms_threshold(op: str, iou_threshold: float) -> str:
    """The threshold input of NonMaxSuppression (see :func:`_float32_threshold`)."""
    return np.array([_float32_threshold(op, float(iou_threshold))], dtype=np.float32)


def kept_positions(g, boxes: str, scores: str, threshold, score_threshold=None) -> str:
    """Positions NonMaxSuppression keeps (``[N, 4]`` boxes, ``[C, N]`` scores), in its order."""
    selected = g.op.NonMaxSuppression(
        g.op.Unsqueeze(boxes, [0]), g.op.Unsqueeze(scores, [0]),
        np.array([_INT64_MAX], dtype=np.int64), threshold, score_threshold,
    )
    return g.op.Reshape(g.op.Slice(selected, [2], [3], [1]), [-1])


# torchvision::nms.default
def torchvision_nms(g, sts, outputs, dets, scores, iou_threshold):
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"
    _require_float32("nms", sts)
    threshold = nms_threshold("nms", iou_threshold)
    order, sorted_boxes, sorted_scores = sorted_for_nms(g, dets, scores)
    positions = kept_positions(g, sorted_boxes, g.op.Unsqueeze(sorted_scores, [0]), threshold)
    return g.op.Gather(order, positions, axis=0, outputs=outputs)


CONVERTERS = (Converter("torchvision::nms.default", torchvision_nms),)
