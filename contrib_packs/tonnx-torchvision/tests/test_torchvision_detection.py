"""torchvision's detection models through the pack's export patches, and its op
``tonnx_torchvision::batched_nms`` against torchvision's ``batched_nms`` on both sides of
its switch (one nms on shifted boxes up to 1000 boxes, one per class above)."""

from __future__ import annotations

from collections import OrderedDict

import pytest

torchvision = pytest.importorskip("torchvision", reason="needs torchvision (CI's second environment)")
pytest.importorskip("tonnx_torchvision", reason="needs pip install ./contrib_packs/tonnx-torchvision")
if not torchvision.extension._has_ops():
    pytest.skip("torchvision's C ops do not load here", allow_module_level=True)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tonnx_torchvision.detection import batched_nms  # noqa: E402

import tonnx  # noqa: E402
from tonnx.testing import check_model, op_module, run_onnxruntime  # noqa: E402

COVERS = {"tonnx_torchvision::batched_nms.default"}
_EXPORTED: dict[float, object] = {}


def _batched_nms_model(iou_threshold: float):
    """One export per threshold, with a dynamic number of boxes, run on every example."""
    if iou_threshold not in _EXPORTED:
        args = (torch.rand(6, 4), torch.rand(6), torch.arange(6))
        _EXPORTED[iou_threshold] = tonnx.to_onnx(
            op_module(batched_nms, 3, {3: iou_threshold}), args, dynamic_shapes=({0: "n"},) * 3
        )
    return _EXPORTED[iou_threshold]


@given(
    n=st.one_of(st.integers(0, 40), st.integers(900, 1100)), classes=st.sampled_from([1, 2, 5, 80]),
    seed=st.integers(0, 2**16), iou_threshold=st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]),
)
def test_batched_nms_both_branches(n, classes, seed, iou_threshold):
    gen = torch.Generator().manual_seed(seed)
    boxes = torch.randint(0, 60, (n, 4), generator=gen).float()
    boxes[:, 2:] += boxes[:, :2] + torch.randint(0, 40, (n, 2), generator=gen).float()
    scores = torch.rand(n, generator=gen)
    idxs = torch.randint(0, classes, (n,), generator=gen) * 3
    (got,) = run_onnxruntime(_batched_nms_model(iou_threshold), [boxes, scores, idxs])
    np.testing.assert_array_equal(got, torchvision.ops.batched_nms(boxes, scores, idxs, iou_threshold).numpy())


@pytest.mark.parametrize("n", [1000, 1001])
def test_batched_nms_takes_torchvisions_branch(n):
    """Small boxes of far-apart classes: shifting them by class rounds their corners, so
    the two branches keep different boxes; each side of 1000 boxes matches its own."""
    from torchvision.ops.boxes import _batched_nms_coordinate_trick, _batched_nms_vanilla

    gen = torch.Generator().manual_seed(n)
    boxes = torch.rand(n, 4, generator=gen) * 0.2
    boxes[:, 2:] = boxes[:, :2] + 0.05 + boxes[:, 2:] * 0.2
    scores, idxs = torch.rand(n, generator=gen), torch.randint(0, 4, (n,), generator=gen) * 100000
    args = (boxes, scores, idxs, 0.5)
    assert not torch.equal(_batched_nms_vanilla(*args), _batched_nms_coordinate_trick(*args))
    (got,) = run_onnxruntime(_batched_nms_model(0.5), [boxes, scores, idxs])
    np.testing.assert_array_equal(got, torchvision.ops.batched_nms(*args).numpy())


class _TinyBackbone(torch.nn.Module):
    """Two feature maps (strides 4 and 8), so the box head pools rois over two levels."""

    out_channels = 8

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, stride=4, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1)

    def forward(self, x):
        f1 = torch.relu(self.c1(x))
        return OrderedDict([("0", f1), ("1", torch.relu(self.c2(f1)))])


class _Detections(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        found = self.model([image])[0]
        return tuple(found[k] for k in sorted(found))


def _tiny_faster_rcnn():
    from torchvision.models.detection import FasterRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator

    torch.manual_seed(0)
    anchors = AnchorGenerator(sizes=((16,), (32,)), aspect_ratios=((0.5, 1.0, 2.0),) * 2)
    pool = torchvision.ops.MultiScaleRoIAlign(featmap_names=["0", "1"], output_size=4, sampling_ratio=2)
    model = FasterRCNN(
        _TinyBackbone(), num_classes=4, rpn_anchor_generator=anchors, box_roi_pool=pool,
        min_size=96, max_size=128, box_score_thresh=0.0, representation_size=16,
    )
    return _Detections(model.eval())


def test_faster_rcnn_matches_torchvision():
    """RPN (nms per level), two-level roi pooling, per-class nms of the box head; the same
    boxes, labels and scores on other images. The images need no padding: a padded border
    gives equal objectness to many anchors, whose order torchvision's non-stable sort
    decides (see the README)."""
    images = [torch.rand(3, 96, 128, generator=torch.Generator().manual_seed(s)) for s in range(3)]
    onx = check_model(
        _tiny_faster_rcnn(), (images[0],), other_inputs=[(image,) for image in images[1:]],
        expect_ops=["tonnx_torchvision::batched_nms.default", "torchvision::roi_align.default"],
    )
    assert "NonMaxSuppression" in {n.op_type for n in onx.graph.node}


def test_without_the_pack_export_stops_at_a_data_dependent_branch():
    model, image = _tiny_faster_rcnn(), torch.rand(3, 96, 128)
    with pytest.raises(Exception, match="data-dependent"):
        tonnx.to_onnx(model, (image,), dispatcher=tonnx.Dispatcher(packs=["no:torchvision"]))
