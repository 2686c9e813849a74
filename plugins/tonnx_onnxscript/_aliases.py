"""ATen ops torchlib has no function for, that are another op torchlib converts.

torch.onnx never meets these: it decomposes the program to Core ATen first. tonnx converts
torch.export's graph as it is, so ``x.to(torch.float16)``, ``batch_norm`` or ``x & y`` reach
the fallback under their own names. Each entry maps the call onto the torchlib op that
computes the same thing, exactly; a case that is not the same raises UnsupportedError.
"""

from __future__ import annotations

from tonnx import UnsupportedError


def _to_copy(self, dtype=None):
    return (self,), {"dtype": dtype}


def to_dtype(self, dtype, non_blocking=False, copy=False, memory_format=None):
    return _to_copy(self, dtype)


def to_device(self, device, dtype, non_blocking=False, copy=False, memory_format=None):
    return _to_copy(self, dtype)


def to_dtype_layout(self, *, dtype=None, layout=None, device=None, pin_memory=None,
                    non_blocking=False, copy=False, memory_format=None):
    return _to_copy(self, dtype)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    if training or running_mean is None:
        raise UnsupportedError("batch_norm in training mode (batch statistics) is not aliased.")
    args = (input, weight, bias, running_mean, running_var, momentum, eps)
    return args, {}, 0


def adaptive_avg_pool2d(self, output_size):
    if any(s != 1 for s in output_size):
        raise UnsupportedError(f"adaptive_avg_pool2d to {output_size}: only a global pooling (1, 1).")
    return (self, [-2, -1], True), {}


def same(*args, **kwargs):
    return args, kwargs


#: alias key -> (torchlib key, function mapping the op's arguments to (args, kwargs[, index
#: of the torchlib op's result to keep])).
ALIASES = {
    "aten::to.dtype": ("aten::_to_copy.default", to_dtype),
    "aten::to.device": ("aten::_to_copy.default", to_device),
    "aten::to.dtype_layout": ("aten::_to_copy.default", to_dtype_layout),
    "aten::batch_norm.default": ("aten::_native_batch_norm_legit_no_training.default", batch_norm),
    "aten::adaptive_avg_pool2d.default": ("aten::mean.dim", adaptive_avg_pool2d),
    "aten::__and__.Tensor": ("aten::bitwise_and.Tensor", same),
    "aten::__or__.Tensor": ("aten::bitwise_or.Tensor", same),
    "aten::__xor__.Tensor": ("aten::bitwise_xor.Tensor", same),
    "aten::__and__.Scalar": ("aten::bitwise_and.Scalar", same),
    "aten::__or__.Scalar": ("aten::bitwise_or.Scalar", same),
    "aten::__xor__.Scalar": ("aten::bitwise_xor.Scalar", same),
}
