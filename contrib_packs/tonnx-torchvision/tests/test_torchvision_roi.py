"""``torchvision::roi_align``, ``roi_pool``, ``ps_roi_align`` against torchvision's CPU
kernels, in onnxruntime: sampling ratios (adaptive and fixed), aligned or not, spatial
scales float32 holds or not, rois partly or wholly outside the image, inverted or empty."""

from __future__ import annotations

import pytest

torchvision = pytest.importorskip("torchvision", reason="needs torchvision (CI's second environment)")
pytest.importorskip("tonnx_torchvision", reason="needs pip install ./contrib_packs/tonnx-torchvision")
if not torchvision.extension._has_ops():
    pytest.skip("torchvision's C ops do not load here", allow_module_level=True)

import torch  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tonnx_torchvision import TorchvisionOpError  # noqa: E402

import tonnx  # noqa: E402
from tonnx.testing import check_model, check_op, make_tensor, op_module, run_onnxruntime, seeds  # noqa: E402

COVERS = {
    "torchvision::roi_align.default",
    "torchvision::roi_pool.default",
    "torchvision::ps_roi_align.default",
}
ops = torchvision.ops
#: powers of two (detection models' strides), and scales float32 rounds
scales = st.sampled_from([1.0, 0.5, 0.25, 0.0625, 2.0, 0.3, 1 / 3, 0.7])
pooled = st.tuples(st.integers(1, 4), st.integers(1, 4))
sampling_ratios = st.sampled_from([-1, 0, 1, 2, 3])
EXACT32 = {"atol": 1e-5, "rtol": 1e-5}
EXACT64 = {"atol": 1e-12, "rtol": 1e-12}


@st.composite
def feature_and_rois(draw, dtype=torch.float32, channels=None):
    """A feature map and rois inside, across and outside it (corners on half-pixels and
    anywhere), some empty or inverted."""
    batch, height, width = draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(1, 9))
    c = draw(channels if channels is not None else st.integers(1, 4))
    feature = make_tensor(draw(seeds()), (batch, c, height, width), dtype)
    k = draw(st.integers(0, 6))
    coord = st.one_of(st.integers(-4, 24).map(lambda v: v / 2), st.floats(-5.0, 20.0))
    rows = [[draw(st.integers(0, batch - 1))] + [draw(coord) for _ in range(4)] for _ in range(k)]
    rois = torch.tensor(rows, dtype=dtype).reshape(k, 5)
    if k and draw(st.booleans()):  # ordered corners, as detection models make them
        rois[:, 3:] = torch.maximum(rois[:, 1:3], rois[:, 3:])
    return feature, rois


def _check_roi_align(feature, rois, constants, **tol):
    """As check_op; where torchvision's kernel fails (aligned, adaptive grid of a negative
    size on one axis: ``std::vector`` of a negative length), onnxruntime's must fail too."""
    module = op_module(ops.roi_align, 2, constants)
    try:
        module(feature, rois)
    except ValueError as e:
        assert "std::vector" in str(e)
        with pytest.raises(Exception, match="RoiAlign"):
            run_onnxruntime(tonnx.to_onnx(module, (feature, rois)), [feature, rois])
        return
    check_op(ops.roi_align, [feature, rois], constants=constants, expect_op="torchvision::roi_align.default", **tol)


@given(data=feature_and_rois(), size=pooled, spatial_scale=scales, sampling_ratio=sampling_ratios, aligned=st.booleans())
def test_roi_align(data, size, spatial_scale, sampling_ratio, aligned):
    feature, rois = data
    _check_roi_align(feature, rois, {2: size, 3: spatial_scale, 4: sampling_ratio, 5: aligned}, **EXACT32)


@given(
    data=feature_and_rois(torch.float64), size=pooled, spatial_scale=st.sampled_from([1.0, 0.5, 0.125, 0.75]),
    sampling_ratio=sampling_ratios, aligned=st.booleans(),
)
def test_roi_align_float64(data, size, spatial_scale, sampling_ratio, aligned):
    feature, rois = data
    _check_roi_align(feature, rois, {2: size, 3: spatial_scale, 4: sampling_ratio, 5: aligned}, **EXACT64)


def test_roi_align_float64_scale_float32_cannot_hold_is_refused():
    feature, rois = torch.rand(1, 1, 4, 4, dtype=torch.float64), torch.tensor([[0, 0, 0, 2, 2.0]], dtype=torch.float64)
    with pytest.raises(tonnx.UnsupportedError, match=r"torchvision::roi_align: float64 input with spatial_scale=0.3") as info:
        tonnx.to_onnx(op_module(ops.roi_align, 2, {2: 2, 3: 0.3}), (feature, rois))
    assert isinstance(info.value.__cause__, TorchvisionOpError)


def test_roi_align_dynamic_number_of_rois():
    feature = torch.rand(2, 3, 8, 8)

    def rois(k):
        corners = torch.rand(k, 4) * 8
        return torch.cat([torch.randint(0, 2, (k, 1)).float(), corners[:, :2], corners[:, :2] + corners[:, 2:]], 1)

    check_model(
        op_module(ops.roi_align, 2, {2: (2, 2), 3: 0.5, 4: -1, 5: True}), (feature, rois(5)),
        other_inputs=[(feature, rois(1)), (feature, rois(40))], dynamic_shapes=(None, {0: "rois"}),
        expect_ops=["torchvision::roi_align.default"], **EXACT32,
    )


@given(data=feature_and_rois(), size=pooled, spatial_scale=scales)
def test_roi_pool(data, size, spatial_scale):
    feature, rois = data
    check_op(
        ops.roi_pool, [feature, rois], constants={2: size, 3: spatial_scale},
        expect_op="torchvision::roi_pool.default", **EXACT32,
    )


def test_roi_pool_argmax_is_refused():
    def both(feature, rois):
        return torch.ops.torchvision.roi_pool(feature, rois, 1.0, 2, 2)

    feature, rois = torch.rand(1, 2, 4, 4), torch.tensor([[0, 0, 0, 3, 3.0]])
    with pytest.raises(tonnx.UnsupportedError, match=r"torchvision::roi_pool: reading its second output \(argmax\)"):
        tonnx.to_onnx(op_module(both, 2), (feature, rois))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
def test_roi_pool_other_types_are_refused(dtype):
    feature, rois = torch.rand(1, 2, 4, 4, dtype=dtype), torch.tensor([[0, 0, 0, 3, 3.0]], dtype=dtype)
    with pytest.raises(tonnx.UnsupportedError, match=r"torchvision::roi_pool: input and rois of ONNX type"):
        tonnx.to_onnx(op_module(ops.roi_pool, 2, {2: 2}), (feature, rois))


@st.composite
def ps_case(draw, dtype=torch.float32):
    size = draw(pooled)
    channels = st.integers(1, 2).map(lambda c: c * size[0] * size[1])
    return draw(feature_and_rois(dtype, channels)), size


@given(case=ps_case(), spatial_scale=scales, sampling_ratio=sampling_ratios)
def test_ps_roi_align(case, spatial_scale, sampling_ratio):
    """Empty or inverted rois with an adaptive grid make torchvision divide 0 by 0: NaN."""
    (feature, rois), size = case
    check_op(
        ops.ps_roi_align, [feature, rois], constants={2: size, 3: spatial_scale, 4: sampling_ratio},
        expect_op="torchvision::ps_roi_align.default", **EXACT32,
    )


@given(case=ps_case(torch.float64), sampling_ratio=sampling_ratios)
def test_ps_roi_align_float64(case, sampling_ratio):
    (feature, rois), size = case
    check_op(
        ops.ps_roi_align, [feature, rois], constants={2: size, 3: 0.25, 4: sampling_ratio},
        expect_op="torchvision::ps_roi_align.default", **EXACT64,
    )


def test_ps_roi_align_rois_without_samples():
    """Empty: 0 / 0 (NaN); inverted on one axis: 0 / a negative count (onnxruntime's
    RoiAlign fails on it); inverted on both: 0."""
    rows = [[0, 2.0, 2.0, 2.0, 2.0], [0, 1.0, 1.0, 4.0, 4.0], [0, 4.0, 1.0, 1.0, 4.0], [0, 4.0, 4.0, 1.0, 1.0]]
    feature, rois = torch.rand(1, 4, 5, 5), torch.tensor(rows)
    onx = check_op(
        ops.ps_roi_align, [feature, rois], constants={2: 2, 3: 1.0, 4: -1},
        expect_op="torchvision::ps_roi_align.default", **EXACT32,
    )
    assert "Where" in {n.op_type for n in onx.graph.node}
    expected = ops.ps_roi_align(feature, rois, 2)
    assert expected[0].isnan().all() and (expected[2:] == 0).all()


def test_ps_roi_align_channel_mapping_is_refused():
    def both(feature, rois):
        return torch.ops.torchvision.ps_roi_align(feature, rois, 1.0, 2, 2, -1)

    feature, rois = torch.rand(1, 4, 4, 4), torch.tensor([[0, 0, 0, 3, 3.0]])
    with pytest.raises(tonnx.UnsupportedError, match=r"torchvision::ps_roi_align: reading its second output"):
        tonnx.to_onnx(op_module(both, 2), (feature, rois))
