"""``torchvision::deform_conv2d`` against torchvision's CPU kernel, in onnxruntime:
groups, offset groups, stride, padding, dilation, mask or not, bias or not, offsets that
sample outside the image."""

from __future__ import annotations

import pytest

torchvision = pytest.importorskip("torchvision", reason="needs torchvision (CI's second environment)")
pytest.importorskip("tonnx_torchvision", reason="needs pip install ./contrib_packs/tonnx-torchvision")
if not torchvision.extension._has_ops():
    pytest.skip("torchvision's C ops do not load here", allow_module_level=True)

import torch  # noqa: E402
from hypothesis import assume, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tonnx_torchvision import TorchvisionOpError  # noqa: E402

import tonnx  # noqa: E402
from tonnx.testing import check_op, make_tensor, op_module, seeds  # noqa: E402

COVERS = {"torchvision::deform_conv2d.default"}
KEY = "torchvision::deform_conv2d.default"


class DeformConv(torch.nn.Module):
    def __init__(self, stride, padding, dilation, with_bias):
        super().__init__()
        self.stride, self.padding, self.dilation, self.with_bias = stride, padding, dilation, with_bias

    def forward(self, input, offset, weight, bias, mask=None):
        return torchvision.ops.deform_conv2d(
            input, offset, weight, bias if self.with_bias else None,
            stride=self.stride, padding=self.padding, dilation=self.dilation, mask=mask,
        )


def _out(size, kernel, stride, padding, dilation):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@given(
    seed=seeds(), batch=st.integers(1, 2), groups=st.integers(1, 2), offset_groups=st.integers(1, 2),
    group_channels=st.integers(1, 3), out_per_group=st.integers(1, 2),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)), stride=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(st.integers(0, 1), st.integers(0, 1)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    size=st.tuples(st.integers(3, 8), st.integers(3, 8)), use_mask=st.booleans(), with_bias=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_deform_conv2d(seed, batch, groups, offset_groups, group_channels, out_per_group, kernel, stride,
                       padding, dilation, size, use_mask, with_bias, dtype):
    channels = groups * offset_groups * group_channels
    out = [_out(size[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(2)]
    assume(min(out) >= 1)
    taps = offset_groups * kernel[0] * kernel[1]
    tensors = [
        make_tensor(seed, (batch, channels, *size), dtype),
        make_tensor(seed + 1, (batch, 2 * taps, *out), dtype, -3.0, 3.0),  # samples outside the image too
        make_tensor(seed + 2, (groups * out_per_group, channels // groups, *kernel), dtype),
        make_tensor(seed + 3, (groups * out_per_group,), dtype),
    ]
    if use_mask:
        tensors.append(make_tensor(seed + 4, (batch, taps, *out), dtype, 0.0, 1.0))
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else {"atol": 1e-10, "rtol": 1e-10}
    check_op(DeformConv(stride, padding, dilation, with_bias), tensors, expect_op=KEY, **tol)


def test_deform_conv2d_before_opset_19_is_refused():
    tensors = (torch.rand(1, 2, 4, 4), torch.rand(1, 18, 2, 2), torch.rand(3, 2, 3, 3), torch.rand(3))
    with pytest.raises(tonnx.UnsupportedError, match=r"torchvision::deform_conv2d: opset 18 .*opset 19") as info:
        tonnx.to_onnx(DeformConv(1, 0, 1, True), tensors, target_opset=18)
    assert isinstance(info.value.__cause__, TorchvisionOpError)


def test_deform_conv2d_float16_is_refused():
    tensors = [t.half() for t in (torch.rand(1, 2, 4, 4), torch.rand(1, 18, 2, 2), torch.rand(3, 2, 3, 3), torch.rand(3))]
    with pytest.raises(tonnx.UnsupportedError, match=r"torchvision::deform_conv2d: input of ONNX type 10"):
        tonnx.to_onnx(op_module(torchvision.ops.deform_conv2d, 4), tuple(tensors))
