"""int4 experts: the ortcontrib pack's ``com.microsoft.MoE`` becomes ``com.microsoft.QMoE``.

A mixture-of-experts model keeps most of its weights in its experts (3-D tensors, one matrix
an expert), which ``MatMulNBits`` cannot hold. onnxruntime's ``QMoE`` takes them quantized
in the same symmetric blocks along K (``expert_weight_bits`` 4, ``block_size``): each
expert's ``fc1`` ``[2I, H]`` and ``fc2`` ``[H, I]`` packed as MatMulNBits packs an ``[N, K]``
weight, by the same onnxruntime quantizer. On the CPU (1.31.1 and 1.32.0) its int4 kernel
computes with the dequantized weights in float32: measured equal to ``MoE`` over
:func:`~.quantized_reference.dequantize`'s weights within 6e-8, so the greedy check holds it
to fp32's tolerance. Its int8 kernel rounds the activations too (1.7 % of the output,
measured): int8 folders keep the experts in float32.

``QMoE`` ignores ``normalize_routing_weights=0`` on the CPU: it always divides the top-k
weights by their sum (measured on 1.31.1 and 1.32.0: equal to ``MoE`` with 1 within 6e-8,
0.17 off ``MoE`` with 0). A router that does not renormalize (Qwen3-MoE, OLMoE) gets
``QMoE`` with 1, times the sum of its top-k softmax probabilities: the weights it means.

Only experts the greedy check's reference can find are quantized: a block whose ``fc2``
is the model's own ``down_proj`` parameter, or (GPT-OSS: experts stored transposed,
``[E, I, H]``) the converter's transposed copy of it (``g.derived_from``). The reference
quantizes that module's experts alike (:func:`~.quantized_reference.quantized_reference`):
the same ``[N, K]`` rows, since each row is quantized alone and the converter's
interleaving of gate and up rows only reorders them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tonnx import UnsupportedError

from .quant_plan import add_parts

MS_DOMAIN = "com.microsoft"
#: MoE's inputs: x, router, fc1, fc1 bias, fc2, fc2 bias, fc3 ...
_FC1, _FC1_BIAS, _FC2, _FC2_BIAS, _FC3 = 2, 3, 4, 5, 6


class DownProj(NamedTuple):
    """An experts module's ``down_proj`` as the model holds it."""

    transposed: bool  # [E, I, H] rather than [E, H, I]
    shape: tuple[int, int, int]


def experts_down_names(model: Any) -> dict[str, DownProj]:
    """The experts' 3-D ``down_proj`` parameters by name: the ``fc2`` sources the rule may
    quantize."""
    import torch

    names = {}
    for name, module in model.named_modules():
        down = getattr(module, "down_proj", None)
        gate_up = getattr(module, "gate_up_proj", None)
        if not isinstance(down, torch.nn.Parameter) or not isinstance(gate_up, torch.nn.Parameter):
            continue
        transposed = getattr(module, "is_transposed", None)
        if down.dim() == 3 and gate_up.dim() == 3 and transposed in (True, False):
            names[f"{name}.down_proj" if name else "down_proj"] = DownProj(transposed, tuple(down.shape))
    return names


def _experts_down(plan: Any, g, fc2: str) -> str | None:
    """The model's ``down_proj`` that ``fc2`` is: itself, or a transposed one's copy."""
    down = plan.experts_down.get(fc2)
    if down is not None and not down.transposed:
        return fc2
    sources = g.derived_from.get(fc2, ())
    down = plan.experts_down.get(sources[0]) if len(sources) == 1 else None
    if down is not None and down.transposed:
        experts, inter, hidden = down.shape
        if tuple(g.get_shape(fc2)) == (experts, hidden, inter):
            return sources[0]
    return None


def qmoe(plan: Any, ctx, node):
    """``MoE`` whose fc1 and fc2 are 3-D float32 initializers (in memory, or streamed from
    the checkpoint and quantized as they are written), fc2 a model's experts ``down_proj``
    or its transposed copy -> ``QMoE`` with both quantized (int4 only)."""
    g = ctx.g
    inputs = list(node.inputs) + [""] * (_FC3 + 1 - len(node.inputs))
    down = _experts_down(plan, g, inputs[_FC2]) if plan.bits == 4 and not inputs[_FC3] else None
    if down is None:
        return None
    if len(g.get_shape(inputs[0]) or ()) != 2:
        return None  # tokens in rows, as the ortcontrib pack writes them: the top-k mass is per row
    if not all(_float_experts(g, inputs[i]) for i in (_FC1, _FC2)):
        return None
    fc1, fc2 = g.constants[inputs[_FC1]], g.constants[inputs[_FC2]]
    for what, weight in (("hidden size", fc1), ("expert intermediate size", fc2)):
        k = weight.shape[2]
        if k % plan.block_size:
            raise UnsupportedError(
                f"--precision int4 of {inputs[_FC2]!r}: the {what} {k} is not a multiple of the "
                f"block size {plan.block_size}, which onnxruntime's QMoE needs. Choose --block-size "
                f"among the powers of two dividing {k}."
            )
    (q1, s1), (q2, s2) = (_quantized(plan, g, inputs[i], value) for i, value in ((_FC1, fc1), (_FC2, fc2)))
    plan.experts_rewritten.add(down)
    attributes = dict(node.attributes, expert_weight_bits=4, block_size=plan.block_size, normalize_routing_weights=1)
    new_inputs = [inputs[0], inputs[1], q1, s1, inputs[_FC1_BIAS], q2, s2, inputs[_FC2_BIAS]]
    if node.attributes.get("normalize_routing_weights", 0):
        return [ctx.node("QMoE", new_inputs, node.outputs, domain=MS_DOMAIN, **attributes)]
    normalized = ctx.node("QMoE", new_inputs, 1, domain=MS_DOMAIN, **attributes)
    g.set_type(normalized.outputs[0], g.get_type(inputs[0]))
    g.set_shape(normalized.outputs[0], g.get_shape(inputs[0]))
    top_k = int(node.attributes["k"])
    return [normalized, *_times_top_k_mass(ctx, inputs[1], top_k, normalized.outputs[0], node.outputs)]


def _times_top_k_mass(ctx, router: str, k: int, moe: str, outputs) -> list:
    """``moe * sum(top-k of softmax(router))`` (tokens in rows): renormalized weights back
    to the softmax's."""
    g = ctx.g
    probs = ctx.node("Softmax", [router], 1, axis=-1)
    top = ctx.node("TopK", [probs.outputs[0], g.make_initializer("", np.array([k], dtype=np.int64))], 2, axis=-1)
    axes = g.make_initializer("", np.array([-1], dtype=np.int64))
    mass = ctx.node("ReduceSum", [top.outputs[0], axes], 1, keepdims=1)
    return [probs, top, mass, ctx.node("Mul", [moe, mass.outputs[0]], outputs)]


def _float_experts(g, name: str) -> bool:
    """A 3-D float32 initializer (holding data or a ``meta`` placeholder)."""
    from onnx import TensorProto

    value = g.constants.get(name)
    return value is not None and len(value.shape) == 3 and g.types.get(name) == TensorProto.FLOAT


def _quantized(plan: Any, g, name: str, weight) -> tuple[str, str]:
    """(packed ``[E, N, K / 2]`` uint8, scales ``[E, N, K / block]``) initializers of the
    experts ``[E, N, K]``, each expert quantized as MatMulNBits' ``[N, K]`` weight: now when
    they are in memory, else placeholders the writer fills."""
    experts, n, k = weight.shape
    (_, blocks, blob), _ = plan.shapes(k, n)
    shapes = (experts, n, blocks * blob), (experts, n, blocks)
    return add_parts(plan, g, name, weight, "experts", (f"{name}_Q4", f"{name}_scales"), shapes)
