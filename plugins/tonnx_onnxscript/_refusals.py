"""Cases where a torchlib function gives other numbers than torch: refused, with the reason.

Found by running torch's OpInfo samples through the fallback alone
(``TONNX_PACKS=no:aten python -m tests.conformance.opinfo --fallback onnxscript``). Where
only some arguments are wrong the op stays and those calls raise UnsupportedError; ops
wrong everywhere are in ``_table.EXCLUDED``. Each check returns the reason, or None.
"""

from __future__ import annotations


def _arg(args, kwargs, index: int, name: str, default=None):
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def divisor_override(g, outputs, args, kwargs):
    if _arg(args, kwargs, 6, "divisor_override") is not None:
        return "torchlib ignores divisor_override (the average is divided by the window size)"
    return None


def _batch_norm(training_index: int | None):
    def check(g, outputs, args, kwargs):
        if training_index is not None and _arg(args, kwargs, training_index, "training"):
            return "torchlib's batch norm in training mode differs from torch (batch statistics)"
        if any(outputs[1:]):
            return "torchlib's saved mean/invstd outputs differ from torch's (empty in eval mode)"
        return None

    return check


def scatter_reduce_mean(g, outputs, args, kwargs):
    reduce = _arg(args, kwargs, 4, "reduce")
    if reduce == "mean" and kwargs.get("include_self", True):
        return "scatter_reduce(reduce='mean', include_self=True): torchlib's mean differs from torch's"
    return None


def nonzero_scalar(g, outputs, args, kwargs):
    if g.get_rank(args[0]) == 0:
        return "nonzero of a 0-d tensor: torchlib gives shape (n, 1), torch (n, 0)"
    return None


#: functional op key -> check (in-place variants use their functional op's check)
REFUSALS = {
    "aten::avg_pool2d.default": divisor_override,
    "aten::avg_pool3d.default": divisor_override,
    "aten::native_batch_norm.default": _batch_norm(5),
    "aten::_native_batch_norm_legit.default": _batch_norm(5),
    "aten::_native_batch_norm_legit.no_stats": _batch_norm(3),
    "aten::_native_batch_norm_legit_functional.default": _batch_norm(5),
    "aten::_native_batch_norm_legit_no_training.default": _batch_norm(None),
    "aten::scatter_reduce.two": scatter_reduce_mean,
    "aten::nonzero.default": nonzero_scalar,
}
