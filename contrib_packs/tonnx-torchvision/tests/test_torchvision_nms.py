"""``torchvision::nms`` against torchvision's CPU kernel, in onnxruntime: ties in scores,
NaN scores, inverted and empty boxes, thresholds float32 cannot hold."""

from __future__ import annotations

import math

import pytest

torchvision = pytest.importorskip("torchvision", reason="needs torchvision (CI's second environment)")
pytest.importorskip("tonnx_torchvision", reason="needs pip install ./contrib_packs/tonnx-torchvision")
if not torchvision.extension._has_ops():
    pytest.skip("torchvision's C ops do not load here", allow_module_level=True)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tonnx_torchvision import TorchvisionOpError  # noqa: E402

import tonnx  # noqa: E402
from tonnx.testing import check_model, check_op, op_module, run_onnxruntime  # noqa: E402

COVERS = {"torchvision::nms.default"}
KEY = "torchvision::nms.default"
nms = torchvision.ops.nms

#: thresholds on both sides of float32 values, the ends, above 1 and NaN
thresholds = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0, 0.1, 1 / 3, 0.7, 1.5, math.nan]),
    st.floats(0.0, 1.0),
)


@st.composite
def detections(draw, max_boxes: int, ties: bool = True, specials: bool = True):
    """Boxes on a coarse grid (exact overlaps, touching edges), some inverted or with NaN
    corners; scores from a few values (ties), NaN and infinities among them."""
    n = draw(st.integers(0, max_boxes))
    corner = st.integers(0, 12).map(float)
    size = st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0, 8.0, -2.0] if specials else [1.0, 2.0, 3.0, 5.0, 8.0])
    rows = [[draw(corner), draw(corner), draw(size), draw(size)] for _ in range(n)]
    boxes = torch.tensor(rows, dtype=torch.float32).reshape(n, 4)
    boxes[:, 2:] += boxes[:, :2]
    if specials and n and draw(st.booleans()):
        boxes[draw(st.integers(0, n - 1)), draw(st.integers(0, 3))] = math.nan
    if ties:
        values = [0.0, 0.25, 0.5, 1.0] + ([math.nan, math.inf, -math.inf] if specials else [])
        scores = [draw(st.sampled_from(values)) for _ in range(n)]
    else:
        scores = draw(st.lists(st.floats(-10, 10), min_size=n, max_size=n, unique=True))
    return boxes, torch.tensor(scores, dtype=torch.float32).reshape(n)


@given(data=detections(max_boxes=16), iou_threshold=thresholds)
def test_nms_with_ties_nan_and_inverted_boxes(data, iou_threshold):
    """Up to 16 boxes, torchvision's sort of tied scores is stable: every output equal."""
    boxes, scores = data
    check_op(nms, [boxes, scores], constants={2: iou_threshold}, expect_op=KEY)


@given(data=detections(max_boxes=200, ties=False), iou_threshold=thresholds)
def test_nms_many_boxes_distinct_scores(data, iou_threshold):
    boxes, scores = data
    check_op(nms, [boxes, scores], constants={2: iou_threshold}, expect_op=KEY)


@given(data=detections(max_boxes=120), iou_threshold=thresholds)
def test_nms_many_ties_keep_the_stable_order(data, iou_threshold):
    """Beyond 16 boxes torchvision orders ties by std::sort's partitioning; the graph keeps
    ``torch.sort(stable=True)``'s order: torchvision on scores made distinct in that order."""
    boxes, scores = data
    onx = tonnx.to_onnx(op_module(nms, 2, {2: iou_threshold}), (boxes, scores))
    (got,) = run_onnxruntime(onx, [boxes, scores])
    order = torch.sort(scores, descending=True, stable=True).indices
    ranks = torch.empty_like(scores)
    ranks[order] = -torch.arange(len(scores), dtype=torch.float32)
    np.testing.assert_array_equal(got, nms(boxes, ranks, iou_threshold).numpy())


def test_nms_dynamic_number_of_boxes():
    gen = torch.Generator().manual_seed(0)

    def inputs(n):
        boxes = torch.rand(n, 4, generator=gen) * 20
        boxes[:, 2:] += boxes[:, :2]
        return boxes, torch.rand(n, generator=gen)

    check_model(
        op_module(nms, 2, {2: 0.4}), inputs(30), other_inputs=[inputs(7), inputs(0), inputs(500)],
        dynamic_shapes=({0: "boxes"}, {0: "boxes"}), expect_ops=[KEY],
    )


def test_nms_threshold_is_rounded_down_to_float32():
    """Two equal boxes' overlap is 1 and a pair's below is exactly representable: the
    threshold just below a float32 overlap keeps torchvision's strict comparison."""
    boxes = torch.tensor([[0.0, 0.0, 4.0, 4.0], [0.0, 0.0, 4.0, 3.0]])
    scores = torch.tensor([1.0, 0.5])
    just_below = float(np.nextafter(np.float64(0.75), 0.0))
    check_op(nms, [boxes, scores], constants={2: just_below}, expect_op=KEY)
    assert len(nms(boxes, scores, just_below)) == 1


def test_negative_threshold_is_refused():
    boxes, scores = torch.tensor([[0.0, 0.0, 1.0, 1.0]]), torch.tensor([1.0])
    with pytest.raises(tonnx.UnsupportedError, match=r"torchvision::nms: iou_threshold=-0.1 .*negative") as info:
        tonnx.to_onnx(op_module(nms, 2, {2: -0.1}), (boxes, scores))
    assert isinstance(info.value.__cause__, TorchvisionOpError)


def test_float64_is_refused():
    boxes, scores = torch.tensor([[0.0, 0.0, 1.0, 1.0]], dtype=torch.float64), torch.tensor([1.0], dtype=torch.float64)
    with pytest.raises(tonnx.UnsupportedError, match=r"torchvision::nms: boxes and scores of ONNX type 11") as info:
        tonnx.to_onnx(op_module(nms, 2, {2: 0.5}), (boxes, scores))
    assert info.value.__cause__.op == "nms"
