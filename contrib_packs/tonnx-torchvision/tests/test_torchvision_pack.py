"""The pack as a user gets it: found through its entry point, every key tested, converters
following their op's schema, blockable."""

from __future__ import annotations

from pathlib import Path

import pytest

torchvision = pytest.importorskip("torchvision", reason="needs torchvision (CI's second environment)")
tonnx_torchvision = pytest.importorskip("tonnx_torchvision", reason="needs pip install ./contrib_packs/tonnx-torchvision")
if not torchvision.extension._has_ops():
    pytest.skip("torchvision's C ops do not load here", allow_module_level=True)

import importlib.metadata  # noqa: E402

import torch  # noqa: E402

import tonnx  # noqa: E402
from tonnx.testing import assert_follows_schema, assert_pack_covered, op_module, pack_converters  # noqa: E402

HERE = Path(__file__).parent
KEYS = {
    "torchvision::nms.default",
    "torchvision::roi_align.default",
    "torchvision::roi_pool.default",
    "torchvision::ps_roi_align.default",
    "torchvision::deform_conv2d.default",
    "tonnx_torchvision::batched_nms.default",
}


def test_discovered_through_its_entry_point():
    found = [ep for ep in importlib.metadata.entry_points(group="tonnx.packs") if ep.name == "torchvision"]
    assert [(ep.value, ep.dist.name, ep.dist.version) for ep in found] == [
        ("tonnx_torchvision", "tonnx-torchvision", tonnx_torchvision.__version__)
    ]


def test_every_key_has_a_test():
    assert {c.key for c in pack_converters("torchvision")} == KEYS
    assert_pack_covered("torchvision", HERE)


def test_converters_follow_the_op_schema():
    for converter in pack_converters("torchvision"):
        assert_follows_schema(converter)


def test_blocked_pack_leaves_the_op_unconverted():
    boxes, scores = torch.tensor([[0.0, 0.0, 1.0, 1.0]]), torch.tensor([1.0])
    model = op_module(torchvision.ops.nms, 2, {2: 0.5})
    with pytest.raises(tonnx.ConverterNotFoundError, match="torchvision::nms.default"):
        tonnx.to_onnx(model, (boxes, scores), dispatcher=tonnx.Dispatcher(packs=["no:torchvision"]))
    onx = tonnx.to_onnx(model, (boxes, scores))
    assert "NonMaxSuppression" in {n.op_type for n in onx.graph.node}
