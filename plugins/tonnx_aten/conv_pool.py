"""Convolutions, pooling, grid sampling and im2col/col2im (upsampling is in resize.py)."""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, is_float, opmath_type, output_used, shape_tensor, unused_output

_INT64_MAX = np.iinfo(np.int64).max

# -- parameters -------------------------------------------------------------------------------


def _ints(values, n: int, what: str) -> list[int]:
    """``values`` (an int or a list) as ``n`` static ints, expanded as ATen does."""
    values = [values] if type(values) is int else list(values)
    if any(type(v) is not int for v in values):
        raise UnsupportedError(f"{what}={values} with a dynamic value: ONNX needs it static")
    if len(values) == 1 and n > 1:
        values = values * n
    if len(values) != n:
        raise UnsupportedError(f"{what}={values} for {n} spatial dimension(s)")
    return values


def _static_int(value, what: str) -> int:
    if type(value) is not int:
        raise UnsupportedError(f"{what}={value!r} is dynamic: ONNX needs it static")
    return value


def _batched(g, x: str, n: int) -> tuple[str, bool]:
    """``x`` with a batch dimension: torch accepts (C, *spatial) where ONNX needs (N, C, ...)."""
    if g.get_rank(x) == n + 1:
        return g.op.Unsqueeze(x, [0]), True
    return x, False


def _emit(g, results, outputs, unbatched: bool) -> tuple[str, ...]:
    """Writes each result to its output name, removing the batch axis ``_batched`` added."""
    names = []
    for r, o in zip(results, outputs):
        if not o:
            names.append("")
        elif unbatched:
            names.append(g.op.Squeeze(r, [0], outputs=[o]))
        else:
            names.append(g.op.Identity(r, outputs=[o]))
    return tuple(names)


def _spatial_rank(sts) -> int:
    """1, 2 or 3: the digit in the op's name (max_pool2d, avg_pool3d, upsample_nearest1d)."""
    name = sts.op_name
    for digit in "123":
        if f"{digit}d" in name:
            return int(digit)
    raise UnsupportedError(f"{name}: unknown number of spatial dimensions")


# -- convolution --------------------------------------------------------------------------------


def _same_pads(g, weight: str, dilation: list[int]) -> list[int]:
    """torch's padding="same": total d*(k-1), the odd element at the end."""
    kernel = g.get_shape(weight)[2:]
    if any(type(k) is not int for k in kernel):
        raise UnsupportedError(f'padding="same" with a dynamic kernel shape {kernel}')
    total = [d * (k - 1) for d, k in zip(dilation, kernel)]
    return [t // 2 for t in total] + [t - t // 2 for t in total]


def _conv_pads(g, weight: str, padding, dilation: list[int], n: int) -> list[int]:
    if padding == "valid":
        return [0] * (2 * n)
    if padding == "same":
        return _same_pads(g, weight, dilation)
    if isinstance(padding, str):
        raise UnsupportedError(f"convolution padding={padding!r}")
    pads = _ints(padding, n, "padding")
    return pads + pads


def _conv(g, outputs, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """Conv or ConvTranspose; both take torch's weight layout as it is."""
    elem = g.get_type(input)
    if not is_float(elem):
        # ONNX defines Conv/ConvTranspose on floats only (ConvInteger is a quantized op)
        raise UnsupportedError("convolution of an integer tensor: ONNX Conv takes floats only")
    n = g.get_rank(weight) - 2
    x, unbatched = _batched(g, input, n)
    dilation = _ints(dilation, n, "dilation")
    attributes = {
        "strides": _ints(stride, n, "stride"),
        "pads": _conv_pads(g, weight, padding, dilation, n),
        "dilations": dilation,
        "group": _static_int(groups, "groups"),
    }
    # torch accumulates float16/bfloat16 in float32 (and ONNX Conv has no bfloat16)
    x, weight = _opmath(g, x), _opmath(g, weight)
    bias = None if bias is None else _opmath(g, bias)
    if transposed:
        y = _conv_transpose(g, x, weight, bias, attributes, _ints(output_padding, n, "output_padding"))
    else:
        y = g.make_node("Conv", [x, weight] if bias is None else [x, weight, bias], **attributes)
    return _emit(g, [cast(g, y, elem)], outputs, unbatched)[0]


def _conv_transpose(g, x: str, weight: str, bias, attributes: dict, output_padding: list[int]) -> str:
    """ConvTranspose; torch's output_padding becomes fewer end pads, then output_padding.

    onnxruntime rejects output_padding >= stride, which torch allows with a dilation: the
    rest of such a padding is added by a Pad, the bias after it (torch's values there).
    """
    n = len(output_padding)
    pads = attributes["pads"]
    extra = [max(0, o - p) for o, p in zip(output_padding, pads[n:])]
    pads = pads[:n] + [max(0, p - o) for o, p in zip(output_padding, pads[n:])]
    attributes = {**attributes, "pads": pads}
    inputs = [x, weight] if bias is None else [x, weight, bias]
    if all(e < s for e, s in zip(extra, attributes["strides"])):
        if any(extra):
            attributes["output_padding"] = extra
        return g.make_node("ConvTranspose", inputs, **attributes)
    y = g.make_node("ConvTranspose", inputs[:2], **attributes)
    y = g.op.Pad(y, np.array([0] * (n + 2) + [0, 0] + extra, dtype=np.int64))
    if bias is None:
        return y
    return g.op.Add(y, g.op.Reshape(bias, np.array([-1] + [1] * n, dtype=np.int64)))


# aten::convolution.default
def aten_convolution(
    g, sts, outputs, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
):
    "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor"
    return _conv(
        g, outputs, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


# aten::_convolution.default
def aten__convolution(
    g,
    sts,
    outputs,
    input,
    weight,
    bias,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    benchmark=False,
    deterministic=False,
    cudnn_enabled=True,
    allow_tf32=True,
):
    "_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark, bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor"
    return _conv(
        g, outputs, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


# aten::conv1d.default, aten::conv2d.default, aten::conv3d.default
def aten_conv(g, sts, outputs, input, weight, bias=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"
    return _conv(g, outputs, input, weight, bias, stride, padding, dilation, False, (0,), groups)


# aten::conv1d.padding, aten::conv2d.padding, aten::conv3d.padding
def aten_conv_padding(
    g, sts, outputs, input, weight, bias=None, stride=(1,), padding="valid", dilation=(1,), groups=1
):
    'conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], str padding="valid", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor'
    return _conv(g, outputs, input, weight, bias, stride, padding, dilation, False, (0,), groups)


# aten::conv_transpose1d.default, aten::conv_transpose2d.input, aten::conv_transpose3d.input
def aten_conv_transpose(
    g,
    sts,
    outputs,
    input,
    weight,
    bias=None,
    stride=(1,),
    padding=(0,),
    output_padding=(0,),
    groups=1,
    dilation=(1,),
):
    "conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor"
    return _conv(g, outputs, input, weight, bias, stride, padding, dilation, True, output_padding, groups)


# -- max pooling --------------------------------------------------------------------------------


def _pool_attributes(kernel_size, stride, padding, n: int, ceil_mode: bool) -> dict:
    kernel = _ints(kernel_size, n, "kernel_size")
    return {
        "kernel_shape": kernel,
        "strides": _ints(stride, n, "stride") if stride else kernel,
        "pads": _ints(padding, n, "padding") * 2,
        "ceil_mode": int(bool(ceil_mode)),
    }


def _max_pool_type(g, x: str) -> int:
    """The type MaxPool runs in: floats and 8-bit integers as they are, others exactly."""
    elem = g.get_type(x)
    if elem == TensorProto.BFLOAT16:
        return TensorProto.FLOAT  # exact: MaxPool takes no bfloat16 before opset 22
    if is_float(elem) or elem in (TensorProto.INT8, TensorProto.UINT8):
        return elem
    if elem in (TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32):
        return TensorProto.DOUBLE  # exact for these integers
    raise UnsupportedError(f"max pooling of {TensorProto.DataType.Name(elem)} tensors")


def _plane_offsets(g, x: str, shape, n: int) -> str:
    """(N, C, 1, ...) offsets of each (n, c) plane in MaxPool's tensor-wide flat indices."""
    if shape is not None and all(type(d) is int for d in shape):
        plane = math.prod(shape[2:])
        offsets = np.arange(shape[0] * shape[1], dtype=np.int64) * plane
        return g.make_initializer("", offsets.reshape(*shape[:2], *([1] * n)))
    batch_channels = g.op.Shape(x, end=2)
    plane = g.op.ReduceProd(g.op.Shape(x, start=2), keepdims=0)
    count = g.op.Mul(g.op.ReduceProd(batch_channels, keepdims=0), plane)
    offsets = g.op.Range(np.array(0, dtype=np.int64), count, plane)
    target = g.op.Concat(batch_channels, np.ones(n, dtype=np.int64), axis=0)
    return g.op.Reshape(offsets, target)


def _max_pool(g, outputs, x: str, n: int, attributes: dict, need_indices: bool | None):
    """MaxPool with torch's results: values, and indices flat within each (n, c) plane.

    ``need_indices`` is None for an op without indices, False when they are not read.
    """
    shape = g.get_shape(x)
    x, unbatched = _batched(g, x, n)
    if unbatched and shape is not None:
        shape = (1, *shape)
    elem = g.get_type(x)
    compute = _max_pool_type(g, x)
    pooled = g.make_node("MaxPool", [cast(g, x, compute)], 2 if need_indices else 1, **attributes)
    values = cast(g, pooled[0] if need_indices else pooled, elem)
    if need_indices is None:
        return _emit(g, [values], outputs, unbatched)[0]
    if not need_indices:
        return (_emit(g, [values], outputs, unbatched)[0], _unused(g, outputs))
    indices = g.op.Sub(pooled[1], _plane_offsets(g, x, shape, n))
    return _emit(g, [values, indices], outputs, unbatched)


def _unused(g, outputs) -> str:
    return unused_output(g, TensorProto.INT64) if outputs[1] else ""


def _max_pool_args(kernel_size, stride, padding, dilation, ceil_mode, n: int) -> dict:
    attributes = _pool_attributes(kernel_size, stride, padding, n, ceil_mode)
    attributes["dilations"] = _ints(dilation, n, "dilation")
    return attributes


# aten::max_pool1d.default, aten::max_pool2d.default, aten::max_pool3d.default
def aten_max_pool(g, sts, outputs, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor"
    n = _spatial_rank(sts)
    attributes = _max_pool_args(kernel_size, stride, padding, dilation, ceil_mode, n)
    return _max_pool(g, outputs, self, n, attributes, None)


# aten::max_pool2d_with_indices.default, aten::max_pool3d_with_indices.default
def aten_max_pool_with_indices(
    g, sts, outputs, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False
):
    "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"
    n = _spatial_rank(sts)
    attributes = _max_pool_args(kernel_size, stride, padding, dilation, ceil_mode, n)
    return _max_pool(g, outputs, self, n, attributes, output_used(sts, outputs, 1))


# -- average pooling ----------------------------------------------------------------------------


def _full_windows(sts, x_shape, attributes: dict, n: int) -> bool:
    """True when every window of a static pooling lies inside the padded input."""
    out = sts.shape[-n:]
    spatial = x_shape[-n:]
    if any(type(d) is not int for d in (*out, *spatial)):
        return False
    k, s, p = attributes["kernel_shape"], attributes["strides"], attributes["pads"]
    return all((o - 1) * s[i] + k[i] <= spatial[i] + 2 * p[i] for i, o in enumerate(out))


def _avg_pool(g, sts, outputs, x: str, n: int, attributes: dict, divisor_override):
    if not is_float(g.get_type(x)):
        raise UnsupportedError(f"average pooling of {TensorProto.DataType.Name(g.get_type(x))} tensors")
    shape = g.get_shape(x)
    elem = g.get_type(x)
    x, unbatched = _batched(g, x, n)
    x = _opmath(g, x)  # torch sums float16/bfloat16 in float32
    if divisor_override is None:
        pooled = g.op.AveragePool(x, **attributes)
        return _emit(g, [cast(g, pooled, elem)], outputs, unbatched)[0]
    if not _full_windows(sts, shape, attributes, n):
        raise UnsupportedError(
            "avg_pool with divisor_override where a window overhangs the padded input "
            "(ceil_mode) or with dynamic sizes: ONNX AveragePool cannot divide those by a constant"
        )
    # every window is whole: sum = mean * window size, then torch divides by the override
    attributes = {**attributes, "count_include_pad": 1}
    factor = math.prod(attributes["kernel_shape"]) / divisor_override
    pooled = g.op.Mul(g.op.AveragePool(x, **attributes), factor)
    return _emit(g, [cast(g, pooled, elem)], outputs, unbatched)[0]


# aten::avg_pool1d.default
def aten_avg_pool1d(
    g, sts, outputs, self, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True
):
    "avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor"
    attributes = _pool_attributes(kernel_size, stride, padding, 1, ceil_mode)
    attributes["count_include_pad"] = int(bool(count_include_pad))
    return _avg_pool(g, sts, outputs, self, 1, attributes, None)


# aten::avg_pool2d.default, aten::avg_pool3d.default
def aten_avg_pool(
    g,
    sts,
    outputs,
    self,
    kernel_size,
    stride=(),
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"
    n = _spatial_rank(sts)
    attributes = _pool_attributes(kernel_size, stride, padding, n, ceil_mode)
    attributes["count_include_pad"] = int(bool(count_include_pad))
    return _avg_pool(g, sts, outputs, self, n, attributes, divisor_override)


# -- adaptive pooling ---------------------------------------------------------------------------


def _adaptive_windows(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive windows: [floor(i*size/out), ceil((i+1)*size/out))."""
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _adaptive_sizes(g, x: str, output_size, n: int) -> tuple[list, list[int]]:
    out = _ints(output_size, n, "output_size")
    return list(g.get_shape(x)[-n:]), out


def _reduce_windows(g, x: str, rank: int, sizes: list, out: list[int], reduce: str) -> str:
    """Reduces each adaptive window, one spatial axis at a time (windows are products)."""
    n = len(out)
    for i, (size, o) in enumerate(zip(sizes, out)):
        axis = rank - n + i
        if size == o:
            continue
        pieces = []
        for start, end in _adaptive_windows(size, o):
            piece = g.op.Slice(x, [start], [end], [axis])
            axes = g.make_initializer("", np.array([axis], dtype=np.int64))
            pieces.append(g.make_node(reduce, [piece, axes], keepdims=1))
        x = pieces[0] if len(pieces) == 1 else g.op.Concat(*pieces, axis=axis)
    return x


def _adaptive_kernel(sizes: list, out: list[int]) -> list[int] | None:
    """The kernel (= stride) when the windows tile the input evenly, None otherwise."""
    if any(type(s) is not int for s in sizes) or any(s % o for s, o in zip(sizes, out)):
        return None
    return [s // o for s, o in zip(sizes, out)]


def _opmath(g, x: str) -> str:
    """float16/bfloat16 as float32: torch accumulates those in float32."""
    return cast(g, x, opmath_type(g.get_type(x)))


def _cast_out(g, x: str, elem: int, outputs) -> str:
    if g.get_type(x) == elem:
        return g.op.Identity(x, outputs=outputs)
    return g.op.Cast(x, to=elem, outputs=outputs)


def _adaptive_avg(g, sts, outputs, self, output_size):
    n = _spatial_rank(sts)
    elem = g.get_type(self)
    if not is_float(elem):
        raise UnsupportedError(f"adaptive_avg_pool of {TensorProto.DataType.Name(elem)} tensors")
    sizes, out = _adaptive_sizes(g, self, output_size, n)
    rank = g.get_rank(self)
    if all(o == 1 for o in out):
        axes = list(range(rank - n, rank))
        return _cast_out(g, g.op.ReduceMean(_opmath(g, self), axes, keepdims=1), elem, outputs)
    kernel = _adaptive_kernel(sizes, out)
    if kernel is not None:
        x, unbatched = _batched(g, self, n)
        pooled = g.op.AveragePool(x, kernel_shape=kernel, strides=kernel)
        return _emit(g, [pooled], outputs, unbatched)[0]
    if any(type(s) is not int for s in sizes):
        raise UnsupportedError(f"adaptive_avg_pool of dynamic sizes {sizes} to {out}")
    pooled = _reduce_windows(g, _opmath(g, self), rank, sizes, out, "ReduceMean")
    return _cast_out(g, pooled, elem, outputs)


# aten::adaptive_avg_pool1d.default
def aten_adaptive_avg_pool1d(g, sts, outputs, self, output_size):
    "adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor"
    return _adaptive_avg(g, sts, outputs, self, output_size)


# aten::adaptive_avg_pool2d.default, aten::adaptive_avg_pool3d.default (and the _ ones)
def aten_adaptive_avg_pool(g, sts, outputs, self, output_size):
    "adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor"
    return _adaptive_avg(g, sts, outputs, self, output_size)


# aten::adaptive_max_pool1d.default, aten::adaptive_max_pool2d.default, ...3d
def aten_adaptive_max_pool(g, sts, outputs, self, output_size):
    "adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)"
    n = _spatial_rank(sts)
    sizes, out = _adaptive_sizes(g, self, output_size, n)
    kernel = _adaptive_kernel(sizes, out)
    if kernel is not None:
        attributes = {"kernel_shape": kernel, "strides": kernel}
        return _max_pool(g, outputs, self, n, attributes, output_used(sts, outputs, 1))
    if output_used(sts, outputs, 1):
        raise UnsupportedError(
            f"adaptive_max_pool indices for sizes {sizes} to {out}: windows of unequal sizes"
        )
    if any(type(s) is not int for s in sizes):
        raise UnsupportedError(f"adaptive_max_pool of dynamic sizes {sizes} to {out}")
    pooled = _reduce_windows(g, self, g.get_rank(self), sizes, out, "ReduceMax")
    return g.op.Identity(pooled, outputs=outputs[:1]), _unused(g, outputs)


# -- grid sampling ------------------------------------------------------------------------------

_GRID_MODES_16 = ("bilinear", "nearest", "bicubic")
_GRID_MODES_20 = ("linear", "nearest", "cubic")
_GRID_PADDING = ("zeros", "border", "reflection")


# aten::grid_sampler.default, aten::grid_sampler_2d.default, aten::grid_sampler_3d.default
def aten_grid_sampler(g, sts, outputs, input, grid, interpolation_mode, padding_mode, align_corners):
    "grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor"
    spatial = g.get_rank(input) - 2
    if g.main_opset < 20 and spatial != 2:
        raise UnsupportedError(f"grid_sampler on {spatial}-D data needs opset 20 (GridSample-20)")
    modes = _GRID_MODES_20 if g.main_opset >= 20 else _GRID_MODES_16
    if spatial == 3 and interpolation_mode == 2:
        raise UnsupportedError("grid_sampler_3d with bicubic interpolation (torch has none)")
    # torch interpolates float16/bfloat16 in float32
    sampled = g.op.GridSample(
        _opmath(g, input),
        _opmath(g, grid),
        mode=modes[interpolation_mode],
        padding_mode=_GRID_PADDING[padding_mode],
        align_corners=int(bool(align_corners)),
    )
    return _cast_out(g, sampled, g.get_type(input), outputs)


# -- col2im -------------------------------------------------------------------------------------


# aten::col2im.default
def aten_col2im(g, sts, outputs, self, output_size, kernel_size, dilation, padding, stride):
    "col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor"
    pads = _ints(padding, 2, "padding")
    attributes = {
        "dilations": _ints(dilation, 2, "dilation"),
        "pads": pads + pads,
        "strides": _ints(stride, 2, "stride"),
    }
    batched = g.get_rank(self) == 3
    x = self if batched else g.op.Unsqueeze(self, np.array([0], dtype=np.int64))
    image = shape_tensor(g, list(output_size))
    block = np.array(_ints(kernel_size, 2, "kernel_size"), dtype=np.int64)
    if batched:
        return g.op.Col2Im(x, image, block, outputs=outputs, **attributes)
    folded = g.op.Col2Im(x, image, block, **attributes)
    return g.op.Squeeze(folded, np.array([0], dtype=np.int64), outputs=outputs)


# aten::im2col.default
def aten_im2col(g, sts, outputs, self, kernel_size, dilation, padding, stride):
    "im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor"
    # one strided Slice per kernel offset, each ending relative to the (padded) end, so the
    # spatial sizes may stay dynamic (torch's decomposition specializes them)
    kernel = _ints(kernel_size, 2, "kernel_size")
    dilation, padding = _ints(dilation, 2, "dilation"), _ints(padding, 2, "padding")
    x, unbatched = _batched(g, self, 2)
    if any(padding):
        x = g.op.Pad(x, np.array([0, 0, *padding] * 2, dtype=np.int64))
    steps, axes = np.array(_ints(stride, 2, "stride"), dtype=np.int64), np.array([2, 3], dtype=np.int64)
    patches = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            tail = [(kernel[0] - 1 - i) * dilation[0], (kernel[1] - 1 - j) * dilation[1]]
            starts = np.array([i * dilation[0], j * dilation[1]], dtype=np.int64)
            ends = np.array([-t if t else _INT64_MAX for t in tail], dtype=np.int64)
            patch = g.op.Slice(x, starts, ends, axes, steps)
            patches.append(g.op.Unsqueeze(patch, np.array([2], dtype=np.int64)))
    stacked = g.op.Concat(*patches, axis=2) if len(patches) > 1 else patches[0]  # N, C, K, oh, ow
    count = kernel[0] * kernel[1]
    channels = g.get_shape(self)[-3]
    if type(channels) is int:
        rows = np.array([channels * count], dtype=np.int64)
    else:
        rows = g.op.Mul(g.op.Shape(self, start=-3, end=-2), np.array([count], dtype=np.int64))
    # the block count spelled out, not -1: Reshape cannot infer -1 from an empty tensor
    blocks = g.op.ReduceProd(g.op.Shape(stacked, start=3), keepdims=1)
    shape = g.op.Concat(g.op.Shape(stacked, start=0, end=1), rows, blocks, axis=0)
    return _emit(g, [g.op.Reshape(stacked, shape)], outputs, unbatched)[0]


CONVERTERS = (
    Converter("aten::convolution.default", aten_convolution),
    Converter("aten::_convolution.default", aten__convolution),
    Converter("aten::conv1d.default", aten_conv),
    Converter("aten::conv2d.default", aten_conv),
    Converter("aten::conv3d.default", aten_conv),
    Converter("aten::conv1d.padding", aten_conv_padding),
    Converter("aten::conv2d.padding", aten_conv_padding),
    Converter("aten::conv3d.padding", aten_conv_padding),
    Converter("aten::conv_transpose1d.default", aten_conv_transpose),
    Converter("aten::conv_transpose2d.input", aten_conv_transpose),
    Converter("aten::conv_transpose3d.input", aten_conv_transpose),
    Converter("aten::max_pool1d.default", aten_max_pool),
    Converter("aten::max_pool2d.default", aten_max_pool),
    Converter("aten::max_pool3d.default", aten_max_pool),
    Converter("aten::max_pool1d_with_indices.default", aten_max_pool_with_indices),
    Converter("aten::max_pool2d_with_indices.default", aten_max_pool_with_indices),
    Converter("aten::max_pool3d_with_indices.default", aten_max_pool_with_indices),
    Converter("aten::avg_pool1d.default", aten_avg_pool1d),
    Converter("aten::avg_pool2d.default", aten_avg_pool),
    Converter("aten::avg_pool3d.default", aten_avg_pool),
    Converter("aten::adaptive_avg_pool1d.default", aten_adaptive_avg_pool1d),
    Converter("aten::adaptive_avg_pool2d.default", aten_adaptive_avg_pool),
    Converter("aten::adaptive_avg_pool3d.default", aten_adaptive_avg_pool),
    Converter("aten::_adaptive_avg_pool2d.default", aten_adaptive_avg_pool),
    Converter("aten::_adaptive_avg_pool3d.default", aten_adaptive_avg_pool),
    Converter("aten::adaptive_max_pool1d.default", aten_adaptive_max_pool),
    Converter("aten::adaptive_max_pool2d.default", aten_adaptive_max_pool),
    Converter("aten::adaptive_max_pool3d.default", aten_adaptive_max_pool),
    Converter("aten::grid_sampler.default", aten_grid_sampler),
    Converter("aten::grid_sampler_2d.default", aten_grid_sampler),
    Converter("aten::grid_sampler_3d.default", aten_grid_sampler),
    Converter("aten::col2im.default", aten_col2im),
    Converter("aten::im2col.default", aten_im2col),
)
