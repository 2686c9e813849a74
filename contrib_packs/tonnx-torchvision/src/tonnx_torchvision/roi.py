"""``torchvision::roi_align``, ``roi_pool`` and ``ps_roi_align`` as ONNX ``RoiAlign`` and
``MaxRoiPool``.

onnxruntime's CPU kernels of both ops come from the same Caffe2 code as torchvision's:
the same sampling points, bilinear weights, sums and divisions, in the input's type.
What the graph adapts:

- ``rois`` are ``[K, 5]`` rows ``(batch, x1, y1, x2, y2)``; ``RoiAlign`` takes the corners
  and the batch column as int64 (truncated, as torchvision's ``int`` conversion);
- ``aligned=True`` is ``coordinate_transformation_mode="half_pixel"`` (opset 16), False
  ``"output_half_pixel"`` (no offset, rois at least 1x1), as torchvision;
- ``sampling_ratio <= 0`` means adaptive in both; ONNX spells it 0;
- ``spatial_scale`` is a float32 attribute: for float64 inputs torchvision scales in
  float64, so a scale float32 cannot hold is refused;
- ``ps_roi_align`` is ``RoiAlign`` (half-pixel, as torchvision's kernel) over every input
  channel, then output channel ``c`` of bin ``b`` is taken from input channel
  ``c * bins + b``: the same sum for that bin, ``bins`` times the work of torchvision's
  kernel. A roi whose adaptive grid has no sample (empty or inverted) gives 0 divided by
  the grid's count in torchvision (NaN for 0, -0 for a negative count) where ``RoiAlign``
  gives 0 or fails: the graph computes that grid as torchvision does and writes its value.

Types: float32 and float64 (``RoiAlign``), float32 (``MaxRoiPool``); the second outputs
(``argmax``, ``channel_mapping``, for torchvision's backward) are refused when read.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter
from tonnx.converters import numpy_dtype, output_used, shape_of, shape_tensor

from ._errors import TorchvisionOpError

_ROI_ALIGN_TYPES = {TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64"}


def _check_types(op: str, sts, allowed: dict[int, str], onnx_op: str) -> int:
    elem, rois = sts.input_dtypes[0], sts.input_dtypes[1]
    if elem not in allowed or rois != elem:
        raise TorchvisionOpError(
            op, f"input and rois of ONNX type {elem}, {rois}",
            f"onnxruntime's {onnx_op} runs {', '.join(allowed.values())} only, and a cast "
            "would compute in another type than torchvision",
            f"Cast input and rois to {' or '.join(allowed.values())}.",
        )
    return elem


def _check_sizes(op: str, pooled_height, pooled_width) -> None:
    if not (isinstance(pooled_height, int) and isinstance(pooled_width, int)):
        raise TorchvisionOpError(
            op, f"pooled size ({pooled_height}, {pooled_width}) known only at run time",
            "the ONNX op takes the output size as an attribute", "Pass Python ints.",
        )


def _check_scale(op: str, elem: int, spatial_scale: float) -> None:
    if elem == TensorProto.DOUBLE and float(np.float32(spatial_scale)) != spatial_scale:
        raise TorchvisionOpError(
            op, f"float64 input with spatial_scale={spatial_scale!r}",
            "torchvision scales float64 rois by the float64 scale, the ONNX attribute is "
            "float32 and cannot hold this one", "Use a scale float32 holds (1/2**k is one).",
        )


def _refuse_second_output(op: str, outputs, what: str) -> None:
    if output_used(None, outputs, 1):
        raise TorchvisionOpError(
            op, f"reading its second output ({what})",
            "it indexes the input for torchvision's backward and has no ONNX counterpart",
            "Use only the pooled values.",
        )


def _split_rois(g, rois: str) -> tuple[str, str]:
    """``(corners [K, 4], batch indices [K] int64)`` of torchvision's ``[K, 5]`` rois."""
    batch = g.op.Cast(g.op.Reshape(g.op.Slice(rois, [0], [1], [1]), [-1]), to=TensorProto.INT64)
    return g.op.Slice(rois, [1], [5], [1]), batch


def _roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, mode, outputs=None):
    corners, batch = _split_rois(g, rois)
    return g.op.RoiAlign(
        input, corners, batch, coordinate_transformation_mode=mode, mode="avg",
        output_height=pooled_height, output_width=pooled_width,
        sampling_ratio=max(int(sampling_ratio), 0), spatial_scale=float(spatial_scale),
        **({"outputs": outputs} if outputs else {}),
    )


# torchvision::roi_align.default
def torchvision_roi_align(g, sts, outputs, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor"
    elem = _check_types("roi_align", sts, _ROI_ALIGN_TYPES, "RoiAlign")
    _check_sizes("roi_align", pooled_height, pooled_width)
    _check_scale("roi_align", elem, spatial_scale)
    mode = "half_pixel" if aligned else "output_half_pixel"
    return _roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, mode, outputs)


# torchvision::roi_pool.default
def torchvision_roi_pool(g, sts, outputs, input, rois, spatial_scale, pooled_height, pooled_width):
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) -> (Tensor, Tensor)"
    _check_types("roi_pool", sts, {TensorProto.FLOAT: "float32"}, "MaxRoiPool")
    _check_sizes("roi_pool", pooled_height, pooled_width)
    _refuse_second_output("roi_pool", outputs, "argmax")
    pooled = g.op.MaxRoiPool(
        input, rois, pooled_shape=[pooled_height, pooled_width], spatial_scale=float(spatial_scale),
        outputs=[outputs[0]],
    )
    return pooled, ""


def _adaptive_grid(g, corners: str, spatial_scale: float, pooled_height: int, pooled_width: int, elem: int):
    """``(no_samples [K, 1] bool, count [K, 1])``: whether torchvision's adaptive grid of a
    roi has no sample (``ceil(w / pw)`` or ``ceil(h / ph)`` at most 0) and its sample count,
    computed with its operations in the input's type."""
    dtype = numpy_dtype(elem)
    scale, half = np.array(spatial_scale, dtype=dtype), np.array(0.5, dtype=dtype)
    start = g.op.Sub(g.op.Mul(g.op.Slice(corners, [0], [2], [1]), scale), half)
    end = g.op.Sub(g.op.Mul(g.op.Slice(corners, [2], [4], [1]), scale), half)
    grid = g.op.Ceil(g.op.Div(g.op.Sub(end, start), np.array([pooled_width, pooled_height], dtype=dtype)))
    no_samples = g.op.LessOrEqual(g.op.ReduceMin(grid, [1], keepdims=1), np.array(0.0, dtype=dtype))
    return no_samples, g.op.ReduceProd(grid, [1], keepdims=1)


# torchvision::ps_roi_align.default
def torchvision_ps_roi_align(g, sts, outputs, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)"
    elem = _check_types("ps_roi_align", sts, _ROI_ALIGN_TYPES, "RoiAlign")
    _check_sizes("ps_roi_align", pooled_height, pooled_width)
    _check_scale("ps_roi_align", elem, spatial_scale)
    _refuse_second_output("ps_roi_align", outputs, "channel_mapping")
    channels_out = sts.shapes[0][1]
    if not isinstance(channels_out, int):
        raise TorchvisionOpError(
            "ps_roi_align", "a number of channels known only at run time",
            "the graph gathers each bin's channel by its static index", "Export with static channels.",
        )
    bins = pooled_height * pooled_width
    corners, batch = _split_rois(g, rois)
    adaptive = sampling_ratio <= 0
    if adaptive:
        # onnxruntime fails on a grid of negative size where torchvision's loops do not run:
        # such rois are sampled as an empty one, and their result is torchvision's 0 / count
        no_samples, count = _adaptive_grid(g, corners, spatial_scale, pooled_height, pooled_width, elem)
        corners = g.op.Where(no_samples, np.array(0.0, dtype=numpy_dtype(elem)), corners)
    every = g.op.RoiAlign(
        input, corners, batch, coordinate_transformation_mode="half_pixel", mode="avg",
        output_height=pooled_height, output_width=pooled_width,
        sampling_ratio=max(int(sampling_ratio), 0), spatial_scale=float(spatial_scale),
    )
    # [K, C_out * bins, ph, pw] -> [K, C_out, bins * bins]; bin b of channel c is at b * bins + b
    k = shape_of(g, rois, 0, 1)
    flat = g.op.Reshape(every, shape_tensor(g, [k, channels_out, bins * bins]))
    own = g.op.Gather(flat, np.arange(bins, dtype=np.int64) * (bins + 1), axis=2)
    shape = shape_tensor(g, [k, channels_out, pooled_height, pooled_width])
    if not adaptive:
        return g.op.Reshape(own, shape, outputs=[outputs[0]]), ""
    pooled = g.op.Reshape(own, shape)
    empty = g.op.Reshape(no_samples, [-1, 1, 1, 1])
    zero_by_count = g.op.Reshape(g.op.Div(np.array(0.0, dtype=numpy_dtype(elem)), count), [-1, 1, 1, 1])
    return g.op.Where(empty, zero_by_count, pooled, outputs=[outputs[0]]), ""


CONVERTERS = (
    Converter("torchvision::roi_align.default", torchvision_roi_align),
    Converter("torchvision::roi_pool.default", torchvision_roi_pool),
    Converter("torchvision::ps_roi_align.default", torchvision_ps_roi_align),
)
