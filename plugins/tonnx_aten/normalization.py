"""Normalization layers and dropout.

torch computes float16 and bfloat16 normalizations in float32 and rounds once; these
converters do the same (inputs cast to float32, one Cast back), except LayerNormalization
with float16 weights, whose float32 statistics (stash_type=1) keep it within float16's
precision. float64 never goes through an op whose statistics the spec keeps in float32.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, numpy_dtype, opmath_type, output_used

# -- shared pieces ------------------------------------------------------------------------------


def _compute_type(g, *tensors) -> int:
    """The type a normalization runs in: float32 for float16/bfloat16 inputs, else theirs."""
    types = {opmath_type(g.get_type(t)) for t in tensors if t is not None}
    if TensorProto.DOUBLE in types:
        return TensorProto.DOUBLE
    return TensorProto.FLOAT


def _filled(g, like: str, start: int, end: int | None, value: float, elem: int) -> str:
    """A tensor of ``value`` shaped like ``like``'s dimensions [start, end), static or not."""
    shape = g.get_shape(like)
    dims = shape[start:end] if shape is not None else None
    constant = np.array(value, dtype=numpy_dtype(elem))
    if dims is not None and all(type(d) is int for d in dims):
        return g.make_initializer("", np.full(dims, constant))
    return g.op.Expand(constant, g.op.Shape(like, start=start, end=end))


def _channel_view(g, p: str, rank: int) -> str:
    """A per-channel (C,) tensor as (C, 1, ..., 1), to broadcast over (N, C, *spatial)."""
    return g.op.Reshape(p, np.array([-1] + [1] * (rank - 2), dtype=np.int64))


def _affine(g, y: str, weight, bias, rank: int, compute: int) -> str:
    """y * weight + bias with per-channel parameters (either may be None)."""
    if weight is not None:
        y = g.op.Mul(y, _channel_view(g, cast(g, weight, compute), rank))
    if bias is not None:
        y = g.op.Add(y, _channel_view(g, cast(g, bias, compute), rank))
    return y


def _finish(g, y: str, elem: int, outputs) -> str:
    """Writes ``y`` in ``elem`` (torch's result type) to the requested output name."""
    if not outputs:
        return cast(g, y, elem)
    if g.get_type(y) == elem:
        return g.op.Identity(y, outputs=outputs)
    return g.op.Cast(y, to=elem, outputs=outputs)


def _extra(g, sts, outputs, i: int, value) -> str:
    """Output ``i`` (a statistic): ``value()`` cast to torch's type, or '' when unused."""
    if not outputs[i]:
        return ""
    if sts.shapes[i] == (0,):
        empty = np.zeros((0,), dtype=numpy_dtype(sts.dtypes[i]))
        return g.op.Identity(g.make_initializer("", empty, dedup=False), outputs=[outputs[i]])
    if not output_used(sts, outputs, i):
        return g.make_initializer("", np.zeros((0,), dtype=numpy_dtype(sts.dtypes[i])), dedup=False)
    return _finish(g, value(), sts.dtypes[i], [outputs[i]])


def _moments(g, x: str, axes: list[int]) -> tuple[str, str, str]:
    """(mean, x - mean, biased variance) over ``axes``, keeping dims."""
    mean = g.op.ReduceMean(x, np.array(axes, dtype=np.int64), keepdims=1)
    centered = g.op.Sub(x, mean)
    var = g.op.ReduceMean(g.op.Mul(centered, centered), np.array(axes, dtype=np.int64), keepdims=1)
    return mean, centered, var


def _rstd(g, var: str, eps: float) -> str:
    """1 / sqrt(var + eps)."""
    eps = np.array(eps, dtype=numpy_dtype(g.get_type(var)))
    return g.op.Reciprocal(g.op.Sqrt(g.op.Add(var, eps)))


# -- batch normalization ------------------------------------------------------------------------


def _bn_eval(g, input, weight, bias, running_mean, running_var, eps: float) -> str:
    """BatchNormalization with the running statistics, in float32 for float16 inputs."""
    compute = _compute_type(g, input, weight, bias, running_mean, running_var)
    x = cast(g, input, compute)
    scale = cast(g, weight, compute) if weight is not None else _filled(g, input, 1, 2, 1, compute)
    shift = cast(g, bias, compute) if bias is not None else _filled(g, input, 1, 2, 0, compute)
    mean, var = cast(g, running_mean, compute), cast(g, running_var, compute)
    return g.op.BatchNormalization(x, scale, shift, mean, var, epsilon=float(eps))


class _BatchStats:
    """Batch statistics of a training-mode batch norm: mean, biased var, per channel."""

    def __init__(self, g, input, eps: float):
        compute = _compute_type(g, input)
        self.rank = g.get_rank(input)
        axes = [0, *range(2, self.rank)]
        self.x = cast(g, input, compute)
        self.mean, self.centered, self.var = _moments(g, self.x, axes)
        self.rstd = _rstd(g, self.var, eps)
        self.axes = np.array(axes, dtype=np.int64)

    def normalized(self, g, weight, bias) -> str:
        y = g.op.Mul(self.centered, self.rstd)
        return _affine(g, y, weight, bias, self.rank, g.get_type(self.x))

    def channel(self, g, stat: str) -> str:
        return g.op.Squeeze(stat, self.axes)


def _bn_train(g, sts, outputs, input, weight, bias, eps):
    """Batch norm with batch statistics (no running statistics to update)."""
    stats = _BatchStats(g, input, eps)
    y = _finish(g, stats.normalized(g, weight, bias), sts.dtypes[0], outputs[:1])
    if len(outputs) == 1:
        return y
    results = [y, _extra(g, sts, outputs, 1, lambda: stats.channel(g, stats.mean))]
    results.append(_extra(g, sts, outputs, 2, lambda: stats.channel(g, stats.rstd)))
    return tuple(results)


def _refuse_training(what: str, running_mean, running_var) -> None:
    """Training mode with running statistics is refused as training-mode dropout is: the
    model would normalize with each batch's statistics and lose the statistics' update,
    which is what forgetting model.eval() gives."""
    if running_mean is not None or running_var is not None:
        raise UnsupportedError(
            f"{what} in training mode with running statistics: the exported model would "
            f"normalize with each batch's statistics instead of the running ones and drop "
            f"their update; export the model in eval mode (model.eval()). (A norm layer made "
            f"with track_running_stats=False uses batch statistics in eval mode too and is "
            f"exported.)"
        )


def _bn(g, sts, outputs, input, weight, bias, running_mean, running_var, training, momentum, eps):
    if training:
        _refuse_training(sts.op_name, running_mean, running_var)
        return _bn_train(g, sts, outputs, input, weight, bias, eps)
    if running_mean is None or running_var is None:
        raise UnsupportedError("batch_norm in evaluation mode without running statistics")
    y = _finish(g, _bn_eval(g, input, weight, bias, running_mean, running_var, eps), sts.dtypes[0], outputs[:1])
    if len(outputs) == 1:
        return y
    empty = [_extra(g, sts, outputs, i, None) for i in range(1, len(outputs))]
    return (y, *empty)


# aten::batch_norm.default
def aten_batch_norm(
    g, sts, outputs, input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled
):
    "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor"
    return _bn(g, sts, outputs, input, weight, bias, running_mean, running_var, training, momentum, eps)


# aten::_native_batch_norm_legit.default
def aten__native_batch_norm_legit(
    g, sts, outputs, input, weight, bias, running_mean, running_var, training, momentum, eps
):
    "_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)"
    return _bn(g, sts, outputs, input, weight, bias, running_mean, running_var, training, momentum, eps)


# aten::native_batch_norm.default
def aten_native_batch_norm(
    g, sts, outputs, input, weight, bias, running_mean, running_var, training, momentum, eps
):
    "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)"
    return _bn(g, sts, outputs, input, weight, bias, running_mean, running_var, training, momentum, eps)


# aten::_native_batch_norm_legit_no_training.default
def aten__native_batch_norm_legit_no_training(
    g, sts, outputs, input, weight, bias, running_mean, running_var, momentum, eps
):
    "_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)"
    return _bn(g, sts, outputs, input, weight, bias, running_mean, running_var, False, momentum, eps)


# aten::_native_batch_norm_legit.no_stats
def aten__native_batch_norm_legit_no_stats(g, sts, outputs, input, weight, bias, training, momentum, eps):
    "_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)"
    return _bn(g, sts, outputs, input, weight, bias, None, None, training, momentum, eps)


# aten::_native_batch_norm_legit_functional.default
def aten__native_batch_norm_legit_functional(
    g, sts, outputs, input, weight, bias, running_mean, running_var, training, momentum, eps
):
    "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)"
    # training mode (running statistics updated) is refused by _bn
    y = _bn(g, sts, outputs[:3], input, weight, bias, running_mean, running_var, training, momentum, eps)
    # unchanged statistics, in the dtype torch gives them (float32 for float16 inputs)
    same = [
        _finish(g, r, sts.dtypes[i], [o]) if o else ""
        for i, r, o in zip((3, 4), (running_mean, running_var), outputs[3:])
    ]
    return (*y, *same)


# -- layer, group, instance and RMS normalization -----------------------------------------------


def _normalized_axes(g, input, normalized_shape) -> list[int]:
    rank = g.get_rank(input)
    return list(range(rank - len(normalized_shape), rank))


def _last_dims_param(g, p, input, k: int, value: float, elem: int) -> str:
    if p is not None:
        return cast(g, p, elem)
    return _filled(g, input, g.get_rank(input) - k, None, value, elem)


def _layer_norm_onnx(g, input, k: int, weight, bias, eps: float, stats: bool):
    """LayerNormalization: -> (y, mean, rstd) in the compute type (float32 statistics)."""
    elem = g.get_type(input)
    same = all(p is None or g.get_type(p) == elem for p in (weight, bias))
    compute = elem if elem == TensorProto.FLOAT16 and same else TensorProto.FLOAT
    x = cast(g, input, compute)
    scale = _last_dims_param(g, weight, input, k, 1, compute)
    shift = cast(g, bias, compute) if bias is not None else None
    attributes = {"axis": -k, "epsilon": float(eps), "stash_type": 1}
    # no trailing empty input: onnxruntime 1.32 crashes on LayerNormalization(x, scale, "")
    inputs = [x, scale] if shift is None else [x, scale, shift]
    if not stats:
        return g.make_node("LayerNormalization", inputs, **attributes), None, None
    y, mean, rstd = g.make_node("LayerNormalization", inputs, 3, **attributes)
    g.set_type(mean, TensorProto.FLOAT)  # statistics are in stash_type, not X's type
    g.set_type(rstd, TensorProto.FLOAT)
    return y, mean, rstd


def _layer_norm_decomposed(g, input, k: int, weight, bias, eps: float):
    """Layer norm in float64 (LayerNormalization keeps float32 statistics)."""
    rank = g.get_rank(input)
    x = cast(g, input, TensorProto.DOUBLE)
    mean, centered, var = _moments(g, x, list(range(rank - k, rank)))
    rstd = _rstd(g, var, eps)
    y = g.op.Mul(centered, rstd)
    if weight is not None:
        y = g.op.Mul(y, cast(g, weight, TensorProto.DOUBLE))
    if bias is not None:
        y = g.op.Add(y, cast(g, bias, TensorProto.DOUBLE))
    return y, mean, rstd


def _layer_norm(g, input, normalized_shape, weight, bias, eps, stats: bool):
    k = len(normalized_shape)
    if k == 0:
        raise UnsupportedError("layer_norm with an empty normalized_shape")
    if _compute_type(g, input, weight, bias) == TensorProto.DOUBLE:
        return _layer_norm_decomposed(g, input, k, weight, bias, eps)
    return _layer_norm_onnx(g, input, k, weight, bias, eps, stats)


# aten::layer_norm.default
def aten_layer_norm(g, sts, outputs, input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor"
    y, _, _ = _layer_norm(g, input, normalized_shape, weight, bias, eps, stats=False)
    return _finish(g, y, sts.dtype, outputs)


# aten::native_layer_norm.default
def aten_native_layer_norm(g, sts, outputs, input, normalized_shape, weight, bias, eps):
    "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)"
    stats = output_used(sts, outputs, 1) or output_used(sts, outputs, 2)
    y, mean, rstd = _layer_norm(g, input, normalized_shape, weight, bias, eps, stats)
    y = _finish(g, y, sts.dtypes[0], outputs[:1])
    return (y, _extra(g, sts, outputs, 1, lambda: mean), _extra(g, sts, outputs, 2, lambda: rstd))


def _group_stats(g, input, groups: int, eps: float, compute: int):
    """(normalized x in input's shape, mean (N, G, 1), rstd (N, G, 1)) of a group norm."""
    x = cast(g, input, compute)
    grouped = g.op.Reshape(x, np.array([0, groups, -1], dtype=np.int64))
    mean, centered, var = _moments(g, grouped, [2])
    rstd = _rstd(g, var, eps)
    normalized = g.op.Reshape(g.op.Mul(centered, rstd), g.op.Shape(x))
    return normalized, mean, rstd


def _group_norm_instance(g, input, groups: int, weight, bias, eps: float, compute: int) -> str:
    """Group norm as InstanceNormalization over (N, groups, -1), then the per-channel affine:
    onnxruntime runs InstanceNormalization with its own kernel (two passes over each group),
    while GroupNormalization-21 is expanded from its function body. Measured on a
    (1, 128, 32, 32) input with 32 groups, one thread: 0.148 ms against 0.226 ms for the
    ReduceMean decomposition and 0.292 ms for GroupNormalization-21 (onnxruntime 1.32)."""
    x = cast(g, input, compute)
    grouped = g.op.Reshape(x, np.array([0, groups, -1], dtype=np.int64))
    ones = g.make_initializer("", np.ones((groups,), dtype=numpy_dtype(compute)))
    zeros = g.make_initializer("", np.zeros((groups,), dtype=numpy_dtype(compute)))
    normalized = g.op.InstanceNormalization(grouped, ones, zeros, epsilon=float(eps))
    y = g.op.Reshape(normalized, g.op.Shape(x))
    return _affine(g, y, weight, bias, g.get_rank(input), compute)


# aten::group_norm.default
def aten_group_norm(g, sts, outputs, input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enabled=True) -> Tensor"
    compute = _compute_type(g, input, weight, bias)
    if compute == TensorProto.FLOAT:
        return _finish(g, _group_norm_instance(g, input, num_groups, weight, bias, eps, compute), sts.dtype, outputs)
    y, _, _ = _group_stats(g, input, num_groups, eps, compute)  # onnxruntime has no float64 InstanceNormalization
    return _finish(g, _affine(g, y, weight, bias, g.get_rank(input), compute), sts.dtype, outputs)


# aten::native_group_norm.default
def aten_native_group_norm(g, sts, outputs, input, weight, bias, N, C, HxW, group, eps):
    "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)"
    compute = _compute_type(g, input, weight, bias)
    if compute == TensorProto.FLOAT and not (output_used(sts, outputs, 1) or output_used(sts, outputs, 2)):
        y = _finish(g, _group_norm_instance(g, input, group, weight, bias, eps, compute), sts.dtypes[0], outputs[:1])
        return (y, _extra(g, sts, outputs, 1, None), _extra(g, sts, outputs, 2, None))
    y, mean, rstd = _group_stats(g, input, group, eps, compute)
    y = _finish(g, _affine(g, y, weight, bias, g.get_rank(input), compute), sts.dtypes[0], outputs[:1])
    squeeze = np.array([2], dtype=np.int64)
    stats = [_extra(g, sts, outputs, i, lambda s=s: g.op.Squeeze(s, squeeze)) for i, s in ((1, mean), (2, rstd))]
    return (y, *stats)


# aten::instance_norm.default
def aten_instance_norm(
    g, sts, outputs, input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
):
    "instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor"
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise UnsupportedError("instance_norm without input statistics nor running statistics")
        y = _bn_eval(g, input, weight, bias, running_mean, running_var, eps)
        return _finish(g, y, sts.dtype, outputs)
    _refuse_training(sts.op_name, running_mean, running_var)  # their update would be lost
    compute = _compute_type(g, input, weight, bias)
    x = cast(g, input, compute)
    scale = cast(g, weight, compute) if weight is not None else _filled(g, input, 1, 2, 1, compute)
    shift = cast(g, bias, compute) if bias is not None else _filled(g, input, 1, 2, 0, compute)
    return _finish(g, g.op.InstanceNormalization(x, scale, shift, epsilon=float(eps)), sts.dtype, outputs)


def _rms_norm_decomposed(g, input, k: int, weight, eps: float, compute: int) -> str:
    """``x / sqrt(mean(x ** 2) + eps) * weight``, squared with Pow: onnxruntime fuses the
    chain from a Pow(x, 2) (not from Mul(x, x)) into SimplifiedLayerNormalization."""
    rank = g.get_rank(input)
    x = cast(g, input, compute)
    axes = np.array(list(range(rank - k, rank)), dtype=np.int64)
    square = g.op.Pow(x, np.array(2, dtype=numpy_dtype(compute)))
    mean_square = g.op.ReduceMean(square, axes, keepdims=1)
    y = g.op.Mul(x, _rstd(g, mean_square, eps))
    return y if weight is None else g.op.Mul(y, cast(g, weight, compute))


# aten::rms_norm.default
def aten_rms_norm(g, sts, outputs, input, normalized_shape, weight=None, eps=None):
    "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor"
    k = len(normalized_shape)
    compute = _compute_type(g, input, weight)
    if eps is None:
        # torch's default is the epsilon of the type it computes in (float32 for float16)
        eps = float(np.finfo(numpy_dtype(compute)).eps)
    if g.main_opset >= 23 and compute == TensorProto.FLOAT:
        x = cast(g, input, compute)
        scale = _last_dims_param(g, weight, input, k, 1, compute)
        y = g.op.RMSNormalization(x, scale, axis=-k, epsilon=float(eps), stash_type=1)
    else:
        y = _rms_norm_decomposed(g, input, k, weight, eps, compute)
    return _finish(g, y, sts.dtype, outputs)


# -- dropout ------------------------------------------------------------------------------------


def _identity_dropout(p: float, train, what: str) -> None:
    if train and p != 0:
        raise UnsupportedError(
            f"{what} in training mode (p={p}): random masks cannot be reproduced; "
            f"export the model in eval mode (model.eval())"
        )


# aten::dropout.default (and feature_dropout, alpha_dropout, feature_alpha_dropout, in place)
def aten_dropout(g, sts, outputs, input, p, train):
    "dropout(Tensor input, float p, bool train) -> Tensor"
    _identity_dropout(p, train, sts.op_name)
    return g.op.Identity(input, outputs=outputs)


# aten::dropout_.default (and the other in-place dropouts)
def aten_dropout_(g, sts, outputs, self, p, train):
    "dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)"
    _identity_dropout(p, train, sts.op_name)
    return g.op.Identity(self, outputs=outputs)


# aten::native_dropout.default
def aten_native_dropout(g, sts, outputs, input, p, train):
    "native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)"
    _identity_dropout(p, train is None or train, "native_dropout")
    y = g.op.Identity(input, outputs=outputs[:1])
    if not outputs[1]:
        return y, ""
    mask = g.op.Expand(np.array(True), g.op.Shape(input), outputs=outputs[1:])
    return y, mask


CONVERTERS = (
    Converter("aten::batch_norm.default", aten_batch_norm),
    Converter("aten::native_batch_norm.default", aten_native_batch_norm),
    Converter("aten::_native_batch_norm_legit.default", aten__native_batch_norm_legit),
    Converter("aten::_native_batch_norm_legit.no_stats", aten__native_batch_norm_legit_no_stats),
    Converter(
        "aten::_native_batch_norm_legit_no_training.default",
        aten__native_batch_norm_legit_no_training,
    ),
    Converter(
        "aten::_native_batch_norm_legit_functional.default",
        aten__native_batch_norm_legit_functional,
    ),
    Converter("aten::layer_norm.default", aten_layer_norm),
    Converter("aten::native_layer_norm.default", aten_native_layer_norm),
    Converter("aten::group_norm.default", aten_group_norm),
    Converter("aten::native_group_norm.default", aten_native_group_norm),
    Converter("aten::instance_norm.default", aten_instance_norm),
    Converter("aten::rms_norm.default", aten_rms_norm),
    Converter("aten::dropout.default", aten_dropout),
    Converter("aten::dropout_.default", aten_dropout_),
    Converter("aten::feature_dropout.default", aten_dropout),
    Converter("aten::feature_dropout_.default", aten_dropout_),
    Converter("aten::alpha_dropout.default", aten_dropout),
    Converter("aten::alpha_dropout_.default", aten_dropout_),
    Converter("aten::feature_alpha_dropout.default", aten_dropout),
    Converter("aten::feature_alpha_dropout_.default", aten_dropout_),
    Converter("aten::native_dropout.default", aten_native_dropout),
)
