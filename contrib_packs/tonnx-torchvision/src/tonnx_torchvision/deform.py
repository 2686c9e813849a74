"""``torchvision::deform_conv2d`` as ONNX ``DeformConv`` (opset 19).

ONNX's op was specified after torchvision's: the same offset layout (``(dy, dx)`` pairs
per kernel position and offset group), the same mask, bilinear sampling with zeros
outside the image. onnxruntime (1.31, 1.32) has a CPU kernel; like torchvision's, it
samples the columns and multiplies them with the weights, so results agree to the
rounding of a convolution's sums. Before opset 19 the op does not exist and the call is
refused; so are types onnxruntime's kernel lacks.
"""

from __future__ import annotations

from onnx import TensorProto

from tonnx import Converter

from ._errors import TorchvisionOpError

_TYPES = {TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64"}


def _static(name: str, value) -> int:
    if not isinstance(value, int):
        raise TorchvisionOpError(
            "deform_conv2d", f"{name}={value} known only at run time",
            "DeformConv takes it as an attribute", "Pass Python ints.",
        )
    return value


# torchvision::deform_conv2d.default
def torchvision_deform_conv2d(
    g, sts, outputs, input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
    dilation_h, dilation_w, groups, offset_groups, use_mask,
):
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor"
    if g.main_opset < 19:
        raise TorchvisionOpError(
            "deform_conv2d", f"opset {g.main_opset}", "ONNX has DeformConv from opset 19",
            "Export with opset=19 or later.",
        )
    elem = sts.input_dtypes[0]
    if elem not in _TYPES:
        raise TorchvisionOpError(
            "deform_conv2d", f"input of ONNX type {elem}",
            "onnxruntime's DeformConv runs float32 and float64 only, a cast would compute in "
            "another type than torchvision", "Cast the input and weights to float32.",
        )
    kernel = g.get_shape(weight)[2:]
    attrs = {
        name: [_static(name, v) for v in values]
        for name, values in (
            ("strides", (stride_h, stride_w)),
            ("pads", (pad_h, pad_w, pad_h, pad_w)),
            ("dilations", (dilation_h, dilation_w)),
            ("kernel_shape", kernel),
        )
    }
    return g.op.DeformConv(
        input, weight, offset, bias, mask if use_mask else None,
        group=_static("groups", groups), offset_group=_static("offset_groups", offset_groups),
        outputs=outputs, **attrs,
    )


CONVERTERS = (Converter("torchvision::deform_conv2d.default", torchvision_deform_conv2d),)
