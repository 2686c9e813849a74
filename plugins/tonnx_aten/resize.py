"""Upsampling (aten::upsample_*, antialiased bilinear and bicubic): Resize where its coordinates
are torch's, else torch's own indices or filter weights."""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import is_float, numpy_dtype, shape_tensor

from .conv_pool import _spatial_rank

# -- upsampling ---------------------------------------------------------------------------------
#
# torch computes source coordinates in float32 from a scale that is 1/scale_factor when one
# is given, in/out otherwise. Linear and cubic modes go to Resize (same formulas, float
# rounding aside). Nearest modes pick indices, where one rounding can change a pixel:
# Resize is used only when its indices provably equal torch's, else a Gather of torch's own.


def _upsample_axes(g, x: str, n: int, sts, output_size, scales) -> tuple[list, list, list]:
    """(input sizes, output sizes, torch scale factors or None) of the ``n`` last axes."""
    sizes = list(g.get_shape(x)[-n:])
    if output_size is not None:
        out = list(output_size)
    else:
        out = list(sts.shape[-n:])
    scales = list(scales) if scales is not None else [None] * n
    return sizes, out, scales


def _torch_nearest(size: int, out: int, scale, exact: bool, shortcuts: bool) -> np.ndarray:
    """The source index torch's CPU kernel picks for each output index.

    floorf(dst * scale) or floorf((dst + 0.5) * scale) with a float32 scale, clamped to
    size - 1. torch's 2-D nearest kernel (not 1-D, 3-D or exact) first copies when
    out == size and halves when out == 2 * size, whatever the scale (UpSample.h nearest_idx).
    """
    dst = np.arange(out, dtype=np.int64)
    if shortcuts and out == size:
        return dst
    if shortcuts and out == 2 * size:
        return dst >> 1
    if scale is not None and scale > 0:
        factor = np.float32(1.0 / scale)
    else:
        factor = np.float32(size) / np.float32(out)
    if exact:
        src = np.floor((dst + 0.5) * np.float64(factor)).astype(np.float32)
    else:
        src = np.floor(dst.astype(np.float32) * factor)
    return np.minimum(src.astype(np.int64), size - 1)


def _onnx_nearest(size: int, out: int, exact: bool) -> np.ndarray | None:
    """Resize's indices with sizes=out, or None when a float32 runtime could round otherwise.

    asymmetric/floor: floor(dst * size / out), float32 runtimes divide dst by out/size (an
    emulation checked against onnxruntime). half_pixel/round_prefer_ceil: the source
    (2 dst + 1) size / (2 out) must not lie within float32 noise of an integer.
    """
    dst = np.arange(out, dtype=np.int64)
    top = size - 1
    if not exact:
        rational = np.minimum((dst * size) // out, top)
        scale = np.float32(out) / np.float32(size)
        approx = np.minimum(np.floor(dst.astype(np.float32) / scale).astype(np.int64), top)
        return rational if np.array_equal(rational, approx) else None
    numerator, denominator = (2 * dst + 1) * size, 2 * out
    rest = numerator % denominator
    margin = np.minimum(rest, denominator - rest) / denominator
    if np.any(margin <= 1e-5 * max(size, 1)):
        return None
    return np.minimum(numerator // denominator, top)


def _resize_agrees(size, out, scale, exact: bool, shortcuts: bool) -> bool:
    if type(size) is not int or type(out) is not int:
        return False
    onnx = _onnx_nearest(size, out, exact)
    return onnx is not None and np.array_equal(onnx, _torch_nearest(size, out, scale, exact, shortcuts))


def _output_size_graph(g, x: str, axis: int, out, scale) -> str:
    """A 1-element int64 output size: given (an int or a SymInt result) or floor(in*scale)."""
    if out is not None:
        return shape_tensor(g, [out])
    size = g.op.Cast(g.op.Shape(x, start=axis, end=axis + 1), to=TensorProto.DOUBLE)
    return g.op.Cast(g.op.Floor(g.op.Mul(size, np.array([scale]))), to=TensorProto.INT64)


def _nearest_indices_graph(g, x: str, axis: int, out, scale, exact: bool, shortcuts: bool) -> str:
    """torch's nearest indices computed in the graph, for dynamic sizes (same float32 math)."""
    size = g.op.Shape(x, start=axis, end=axis + 1)
    out = _output_size_graph(g, x, axis, out, scale)
    zero, one = np.array(0, dtype=np.int64), np.array(1, dtype=np.int64)
    dst = g.op.Range(zero, g.op.Squeeze(out, [0]), one)
    if scale is not None and scale > 0:
        factor = np.array(np.float32(1.0 / scale))
    else:
        factor = g.op.Div(g.op.Cast(size, to=TensorProto.FLOAT), g.op.Cast(out, to=TensorProto.FLOAT))
    if exact:
        half = g.op.Add(g.op.Cast(dst, to=TensorProto.DOUBLE), np.array(0.5))
        src = g.op.Mul(half, g.op.Cast(factor, to=TensorProto.DOUBLE))
        src = g.op.Cast(src, to=TensorProto.FLOAT)
    else:
        src = g.op.Mul(g.op.Cast(dst, to=TensorProto.FLOAT), factor)
    index = g.op.Cast(g.op.Floor(src), to=TensorProto.INT64)
    index = g.op.Min(index, g.op.Sub(size, np.array([1], dtype=np.int64)))
    if not shortcuts or scale is None:
        return index  # the shortcuts give the same indices as the scale in/out
    doubled = g.op.Equal(out, g.op.Mul(size, np.array([2], dtype=np.int64)))
    halved = g.op.Where(doubled, g.op.Div(dst, np.array(2, dtype=np.int64)), index)
    return g.op.Where(g.op.Equal(out, size), dst, halved)


def _integer_upsample(g, x: str, factors: list[int], outputs) -> str:
    """Nearest upsampling of a 4D tensor by integer factors, given as Resize scales: the
    same indices as sizes (floor(i / k)), and onnxruntime then runs it as an NCHWc Upsample
    beside the convolutions instead of reordering to NCHW and back around it (YOLO's
    necks). yolo11n-seg, 1 thread, CPU-time medians of 4 interleaved rounds, tonnx/torch.onnx
    0.972 with sizes, 0.930 with scales."""
    factors = np.array([1, 1, *factors], dtype=np.float32)
    return g.op.Resize(
        x, None, factors, outputs=outputs, mode="nearest",
        coordinate_transformation_mode="asymmetric", nearest_mode="floor",
    )


def _upsample_nearest(g, sts, outputs, x: str, output_size, scales, exact: bool) -> str:
    n = _spatial_rank(sts)
    sizes, out, scales = _upsample_axes(g, x, n, sts, output_size, scales)
    rank = g.get_rank(x)
    shortcuts = n == 2 and not exact
    if all(_resize_agrees(s, o, f, exact, shortcuts) for s, o, f in zip(sizes, out, scales)):
        if shortcuts and rank == 4 and all(type(s) is int and type(o) is int and o % s == 0 for s, o in zip(sizes, out)):
            return _integer_upsample(g, x, [o // s for s, o in zip(sizes, out)], outputs)
        mode = "half_pixel" if exact else "asymmetric"
        rounding = "round_prefer_ceil" if exact else "floor"
        axes = list(range(rank - n, rank))
        return g.op.Resize(
            x, None, None, np.array(out, dtype=np.int64), outputs=outputs, axes=axes,
            mode="nearest", coordinate_transformation_mode=mode, nearest_mode=rounding,
        )
    for i, (s, o, f) in enumerate(zip(sizes, out, scales)):
        axis = rank - n + i
        if type(s) is int and type(o) is int:
            index = _torch_nearest(s, o, f, exact, shortcuts)
            if s == o and np.array_equal(index, np.arange(o)):
                continue
            index = g.make_initializer("", index)
        else:
            known = None if output_size is None else o
            index = _nearest_indices_graph(g, x, axis, known, f, exact, shortcuts)
        x = g.op.Gather(x, index, axis=axis)
    return g.op.Identity(x, outputs=outputs)


# aten::upsample_nearest1d.vec, aten::upsample_nearest2d.vec, aten::upsample_nearest3d.vec
def aten_upsample_nearest_vec(g, sts, outputs, input, output_size, scale_factors):
    "upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"
    return _upsample_nearest(g, sts, outputs, input, output_size, scale_factors, exact=False)


# aten::_upsample_nearest_exact1d.vec, ..2d.vec, ..3d.vec
def aten_upsample_nearest_exact_vec(g, sts, outputs, input, output_size, scale_factors):
    "_upsample_nearest_exact2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"
    return _upsample_nearest(g, sts, outputs, input, output_size, scale_factors, exact=True)


# aten::upsample_nearest1d.default
def aten_upsample_nearest1d(g, sts, outputs, self, output_size, scales=None):
    "upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor"
    return _upsample_nearest(g, sts, outputs, self, output_size, [scales], exact=False)


# aten::upsample_nearest2d.default
def aten_upsample_nearest2d(g, sts, outputs, self, output_size, scales_h=None, scales_w=None):
    "upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor"
    scales = [scales_h, scales_w]
    return _upsample_nearest(g, sts, outputs, self, output_size, scales, exact=False)


# aten::upsample_nearest3d.default
def aten_upsample_nearest3d(
    g, sts, outputs, self, output_size, scales_d=None, scales_h=None, scales_w=None
):
    "upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor"
    scales = [scales_d, scales_h, scales_w]
    return _upsample_nearest(g, sts, outputs, self, output_size, scales, exact=False)


# aten::_upsample_nearest_exact1d.default
def aten_upsample_nearest_exact1d(g, sts, outputs, self, output_size, scales=None):
    "_upsample_nearest_exact1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor"
    return _upsample_nearest(g, sts, outputs, self, output_size, [scales], exact=True)


# aten::_upsample_nearest_exact2d.default
def aten_upsample_nearest_exact2d(g, sts, outputs, self, output_size, scales_h=None, scales_w=None):
    "_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor"
    scales = [scales_h, scales_w]
    return _upsample_nearest(g, sts, outputs, self, output_size, scales, exact=True)


# aten::_upsample_nearest_exact3d.default
def aten_upsample_nearest_exact3d(
    g, sts, outputs, self, output_size, scales_d=None, scales_h=None, scales_w=None
):
    "_upsample_nearest_exact3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor"
    scales = [scales_d, scales_h, scales_w]
    return _upsample_nearest(g, sts, outputs, self, output_size, scales, exact=True)


def _onnx_scales(sizes: list, out: list, scales: list) -> np.ndarray:
    """float32 Resize scales giving torch's output sizes (floor(size * scale) in float32).

    A scale factor such as 0.7 rounds below 0.7 in float32, so floor(10 * 0.7f) would be 6;
    the next float32 up keeps torch's 7 (torch's own 1/scale is float32 too). The size must
    come out of the float32 product (onnxruntime) and of the exact one (onnx's shape
    inference): 20 * 0.9f is 18 in float32, 17.99999 exactly.
    """
    result = []
    for size, o, scale in zip(sizes, out, scales):
        value = np.float32(scale)
        if type(size) is int and type(o) is int:
            for _ in range(4):
                if int(np.float32(size) * value) == o and math.floor(size * float(value)) == o:
                    break
                value = np.nextafter(value, np.float32(np.inf), dtype=np.float32)
            else:
                raise UnsupportedError(f"upsampling {size} to {o} with scale factor {scale}")
        result.append(value)
    return np.array(result, dtype=np.float32)


def _upsample_interpolate(g, sts, outputs, x, output_size, scales, align_corners, mode: str, antialias=False):
    """Resize in linear or cubic mode, following torch's coordinates."""
    n = _spatial_rank(sts)
    if not is_float(g.get_type(x)):
        raise UnsupportedError(f"{mode} upsampling of {TensorProto.DataType.Name(g.get_type(x))}")
    sizes, out, scales = _upsample_axes(g, x, n, sts, output_size, scales)
    if antialias and out[-1] == 1 and out[0] != 1 and sizes[0] != 1:
        raise UnsupportedError(
            f"{sts.op_name} to a width of 1 and a height of {out[0]} (from {sizes[0]}): torch's "
            f"kernel repeats the first output row there instead of filtering each; resize in "
            f"two steps or without antialias."
        )
    if antialias and (align_corners or any(s is not None and s > 0 for s in scales)):
        return _antialias_matmul(g, sts, outputs, x, sizes, out, scales, align_corners, mode)
    rank = g.get_rank(x)
    attributes = {
        "axes": list(range(rank - n, rank)),
        "mode": mode,
        "coordinate_transformation_mode": "align_corners" if align_corners else "half_pixel",
    }
    if mode == "cubic":
        # torch's antialiased cubic filter is Pillow's (Keys, a = -0.5), the plain one -0.75
        attributes["cubic_coeff_a"] = -0.5 if antialias else -0.75
    if antialias:
        # torch (as Pillow) renormalizes the filter's weights at the borders: exclude_outside
        attributes.update(antialias=1, exclude_outside=1)
    given = [s is not None and s > 0 for s in scales]
    known = output_size is not None or all(type(o) is int for o in out)
    if known and (align_corners or not any(given)):
        # torch ignores the scale factors with align_corners
        return g.op.Resize(x, None, None, shape_tensor(g, out), outputs=outputs, **attributes)
    if not all(given):
        raise UnsupportedError(f"upsampling with scales {scales} given for some axes only")
    onnx_scales = _onnx_scales(sizes, out, scales)
    return g.op.Resize(x, None, onnx_scales, outputs=outputs, **attributes)


def _triangle(distance: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, 1.0 - np.abs(distance))


def _keys_cubic(distance: np.ndarray, a: float = -0.5) -> np.ndarray:
    """Keys' cubic convolution kernel with Pillow's a = -0.5 (torch's HelperInterpCubic::aa_filter)."""
    x = np.abs(distance)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


# half the filter's width in input pixels (torch's interp_size / 2) and the filter
_ANTIALIAS_FILTERS = {"linear": (1.0, _triangle), "cubic": (2.0, _keys_cubic)}


def _antialias_weights(size: int, out: int, scale: float, mode: str) -> np.ndarray:
    """torch's antialiased linear or cubic weights, an (out, size) matrix.

    The filter, widened by torch's scale when downsampling, is centred at scale * (i + 0.5),
    cut to torch's at most 2 * ceil(support) + 1 taps and renormalized where it leaves the
    input (torch's _compute_indices_min_size_weights_aa; checked against torch in float64).
    """
    half, kernel = _ANTIALIAS_FILTERS[mode]
    support, inverse = (half * scale, 1.0 / scale) if scale >= 1.0 else (half, 1.0)
    most = 2 * math.ceil(support) + 1
    weights = np.zeros((out, size))
    for i in range(out):
        center = scale * (i + 0.5)
        low, high = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), size)
        high = low + min(max(high - low, 0), most)
        taps = kernel((np.arange(low, high) - center + 0.5) * inverse)
        weights[i, low:high] = taps / taps.sum() if taps.sum() != 0 else taps
    return weights


def _torch_scale(size: int, out: int, scale, align_corners: bool) -> float:
    """torch's area_pixel_compute_scale: the source step per output pixel."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else size / out


def _antialias_matmul(
    g, sts, outputs, x: str, sizes: list, out: list, scales: list, align_corners: bool, mode: str
) -> str:
    """Antialiasing with align_corners or torch's scale factors (which Resize cannot take
    with the output size: 10 to 3 by 1.7) as torch's own weights, one MatMul per axis."""
    if not all(type(v) is int for v in (*sizes, *out)):
        raise UnsupportedError(
            f"{sts.op_name} with align_corners=True or scale factors on dynamic sizes (its "
            f"weights are built for static sizes); export with static spatial sizes, or give "
            f"the output size with align_corners=False."
        )
    dtype = numpy_dtype(g.get_type(x))
    h, w = (
        _antialias_weights(n, o, _torch_scale(n, o, s, align_corners), mode) for n, o, s in zip(sizes, out, scales)
    )
    rows = g.op.MatMul(h.astype(dtype), x)
    return g.op.MatMul(rows, w.T.astype(dtype), outputs=outputs)


# aten::upsample_linear1d.vec, upsample_bilinear2d.vec, upsample_trilinear3d.vec
def aten_upsample_linear_vec(g, sts, outputs, input, output_size, align_corners, scale_factors):
    "upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"
    return _upsample_interpolate(
        g, sts, outputs, input, output_size, scale_factors, align_corners, "linear"
    )


# aten::upsample_bicubic2d.vec
def aten_upsample_bicubic2d_vec(g, sts, outputs, input, output_size, align_corners, scale_factors):
    "upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"
    return _upsample_interpolate(
        g, sts, outputs, input, output_size, scale_factors, align_corners, "cubic"
    )


# aten::upsample_linear1d.default
def aten_upsample_linear1d(g, sts, outputs, self, output_size, align_corners, scales=None):
    "upsample_linear1d(Tensor self, SymInt[1] output_size, bool align_corners, float? scales=None) -> Tensor"
    return _upsample_interpolate(g, sts, outputs, self, output_size, [scales], align_corners, "linear")


# aten::upsample_bilinear2d.default
def aten_upsample_bilinear2d(
    g, sts, outputs, self, output_size, align_corners, scales_h=None, scales_w=None
):
    "upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"
    scales = [scales_h, scales_w]
    return _upsample_interpolate(g, sts, outputs, self, output_size, scales, align_corners, "linear")


# aten::upsample_trilinear3d.default
def aten_upsample_trilinear3d(
    g, sts, outputs, self, output_size, align_corners, scales_d=None, scales_h=None, scales_w=None
):
    "upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor"
    scales = [scales_d, scales_h, scales_w]
    return _upsample_interpolate(g, sts, outputs, self, output_size, scales, align_corners, "linear")


# aten::upsample_bicubic2d.default
def aten_upsample_bicubic2d(
    g, sts, outputs, self, output_size, align_corners, scales_h=None, scales_w=None
):
    "upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"
    scales = [scales_h, scales_w]
    return _upsample_interpolate(g, sts, outputs, self, output_size, scales, align_corners, "cubic")


# aten::_upsample_bilinear2d_aa.vec
def aten__upsample_bilinear2d_aa_vec(g, sts, outputs, input, output_size, align_corners, scale_factors):
    "_upsample_bilinear2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"
    return _upsample_interpolate(
        g, sts, outputs, input, output_size, scale_factors, align_corners, "linear", antialias=True
    )


# aten::_upsample_bilinear2d_aa.default
def aten__upsample_bilinear2d_aa(
    g, sts, outputs, self, output_size, align_corners, scales_h=None, scales_w=None
):
    "_upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"
    scales = [scales_h, scales_w]
    return _upsample_interpolate(
        g, sts, outputs, self, output_size, scales, align_corners, "linear", antialias=True
    )


# aten::_upsample_bicubic2d_aa.vec
def aten__upsample_bicubic2d_aa_vec(g, sts, outputs, input, output_size, align_corners, scale_factors):
    "_upsample_bicubic2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"
    return _upsample_interpolate(
        g, sts, outputs, input, output_size, scale_factors, align_corners, "cubic", antialias=True
    )


# aten::_upsample_bicubic2d_aa.default
def aten__upsample_bicubic2d_aa(
    g, sts, outputs, self, output_size, align_corners, scales_h=None, scales_w=None
):
    "_upsample_bicubic2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"
    scales = [scales_h, scales_w]
    return _upsample_interpolate(
        g, sts, outputs, self, output_size, scales, align_corners, "cubic", antialias=True
    )


CONVERTERS = (
    Converter("aten::upsample_nearest1d.vec", aten_upsample_nearest_vec),
    Converter("aten::upsample_nearest2d.vec", aten_upsample_nearest_vec),
    Converter("aten::upsample_nearest3d.vec", aten_upsample_nearest_vec),
    Converter("aten::_upsample_nearest_exact1d.vec", aten_upsample_nearest_exact_vec),
    Converter("aten::_upsample_nearest_exact2d.vec", aten_upsample_nearest_exact_vec),
    Converter("aten::_upsample_nearest_exact3d.vec", aten_upsample_nearest_exact_vec),
    Converter("aten::upsample_nearest1d.default", aten_upsample_nearest1d),
    Converter("aten::upsample_nearest2d.default", aten_upsample_nearest2d),
    Converter("aten::upsample_nearest3d.default", aten_upsample_nearest3d),
    Converter("aten::_upsample_nearest_exact1d.default", aten_upsample_nearest_exact1d),
    Converter("aten::_upsample_nearest_exact2d.default", aten_upsample_nearest_exact2d),
    Converter("aten::_upsample_nearest_exact3d.default", aten_upsample_nearest_exact3d),
    Converter("aten::upsample_linear1d.vec", aten_upsample_linear_vec),
    Converter("aten::upsample_bilinear2d.vec", aten_upsample_linear_vec),
    Converter("aten::upsample_trilinear3d.vec", aten_upsample_linear_vec),
    Converter("aten::upsample_bicubic2d.vec", aten_upsample_bicubic2d_vec),
    Converter("aten::upsample_linear1d.default", aten_upsample_linear1d),
    Converter("aten::upsample_bilinear2d.default", aten_upsample_bilinear2d),
    Converter("aten::_upsample_bilinear2d_aa.vec", aten__upsample_bilinear2d_aa_vec),
    Converter("aten::_upsample_bilinear2d_aa.default", aten__upsample_bilinear2d_aa),
    Converter("aten::_upsample_bicubic2d_aa.vec", aten__upsample_bicubic2d_aa_vec),
    Converter("aten::_upsample_bicubic2d_aa.default", aten__upsample_bicubic2d_aa),
    Converter("aten::upsample_trilinear3d.default", aten_upsample_trilinear3d),
    Converter("aten::upsample_bicubic2d.default", aten_upsample_bicubic2d),
)
