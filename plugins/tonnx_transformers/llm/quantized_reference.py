"""The greedy check's reference for int8 / int4: transformers' model with the folder's weights.

``MatMulNBits`` computes ``x @ dequantize(W_Q, scales)``. Against the float32 model its
logits differ by the quantization noise, which grows with the model: on a random 1 B Llama
(16 layers, hidden 2048) int4 moves the logits by 2.5 where the largest is 4.1, for tonnx's
folder and for onnxruntime-genai's builder's alike. A check against float32 has to be that
loose, and then it catches nothing. So the reference holds what the folder holds: each
linear layer's weight quantized by the same quantizer (:meth:`QuantPlan.quantize`) and
dequantized, and the check compares at a tolerance that leaves room only for the int8
rounding of the activations inside the kernel (``accuracy_level`` 4).

The linear layers are ``nn.Linear`` and transformers' ``Conv1D`` (GPT-2), the modules whose
2-D float32 weight the quantization rules find as ``MatMul``/``Gemm`` weights; any other
2-D parameter (a router's weight, read by ``F.linear``) stays float32 in both
(:func:`unquantized_weights`). A tied weight (an lm head sharing the embedding's table)
stays tied when the folder gathers the embeddings from the head's quantized table
(``plan.gathered``: ``GatherBlockQuantized``); else it is untied, as in the folder: the
embedding keeps float32, the head reads the quantized copy. The experts whose ``MoE`` became ``QMoE`` (``plan.experts_rewritten``) are quantized
one expert matrix at a time, along the same K.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np


def dequantize(packed: np.ndarray, scales: np.ndarray, bits: int, k: int) -> np.ndarray:
    """``[N, K]`` float32 of MatMulNBits' symmetric blocks: ``packed`` uint8 ``[N, blocks,
    blob]`` (int4: two values a byte, the low nibble first), ``scales`` ``[N, blocks]``, the
    zero point ``2 ** (bits - 1)``."""
    n, blocks, _ = packed.shape
    if bits == 4:
        values = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(n, blocks, -1)
    else:
        values = packed
    centered = values.astype(np.float32) - float(2 ** (bits - 1))
    return (centered * scales[:, :, None]).reshape(n, -1)[:, :k]


def quantized_reference(model: Any, plan: Any) -> Any:
    """``model`` with every linear layer's weight as ``plan`` writes it; returns ``model``."""
    import torch

    names: dict[int, set[str]] = {}  # every name of each parameter, before any is untied
    for name, parameter in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(parameter), set()).add(name)
    quantized: dict[int, Any] = {}  # id of a linear layer's weight -> its dequantized parameter
    for module in model.modules():
        layout = _layout(module)
        weight = getattr(module, "weight", None) if layout else None
        if weight is None or weight.dim() != 2 or weight.dtype != torch.float32:
            continue
        packed, scales = plan.quantize(weight, layout)
        k = weight.shape[1] if layout == "nk" else weight.shape[0]
        nk = torch.from_numpy(dequantize(np.asarray(packed), np.asarray(scales), plan.bits, k))
        # a new parameter: a tied weight stays float32 for the module it is shared with...
        module.weight = torch.nn.Parameter(nk if layout == "nk" else nk.T.contiguous(), requires_grad=False)
        quantized[id(weight)] = module.weight
    _gather_quantized(model, set(getattr(plan, "gathered", ())), quantized, names)
    for name, module in model.named_modules():
        if f"{name}.down_proj" in plan.experts_rewritten:
            transposed = bool(module.is_transposed)
            for attribute in ("gate_up_proj", "down_proj"):
                setattr(module, attribute, _quantized_experts(getattr(module, attribute), plan, transposed))
    return model


def _gather_quantized(model: Any, gathered: set[str], quantized: dict[int, Any], names: dict[int, set[str]]) -> None:
    """...unless the folder gathers from the quantized table: an embedding whose weight (under
    any of its names) is in ``gathered`` reads the head's dequantized weight, as
    ``GatherBlockQuantized`` does."""
    for module in model.modules():
        weight = getattr(module, "weight", None)
        if _layout(module) is None and weight is not None and id(weight) in quantized and names[id(weight)] & gathered:
            module.weight = quantized[id(weight)]


def _quantized_experts(weight: Any, plan: Any, transposed: bool) -> Any:
    """``[E, N, K]`` experts (``[E, K, N]`` when ``transposed``), each ``[N, K]`` matrix
    quantized and dequantized."""
    import torch

    nk = weight.detach().transpose(1, 2) if transposed else weight.detach()
    packed, scales = plan.quantize(nk, "experts")
    k, blocks = nk.shape[2], scales.shape[2]
    experts = torch.from_numpy(np.stack([
        dequantize(p.reshape(p.shape[0], blocks, -1), s, plan.bits, k) for p, s in zip(packed, scales)
    ]))
    return torch.nn.Parameter(experts.transpose(1, 2).contiguous() if transposed else experts, requires_grad=False)


def unquantized_weights(model: Any) -> frozenset[str]:
    """Names of the 2-D parameters no linear layer reads (routers' weights; embeddings), under
    every name a tied parameter has: the quantization rules leave them float32."""
    owners: dict[int, list] = {}
    for module_name, module in model.named_modules(remove_duplicate=False):
        for name, parameter in module.named_parameters(prefix=module_name, recurse=False, remove_duplicate=False):
            if parameter.dim() == 2:
                owners.setdefault(id(parameter), []).append((name, _layout(module)))
    return frozenset(name for found in owners.values() if not any(layout for _, layout in found) for name, _ in found)


def _layout(module: Any) -> str | None:
    """"nk" for ``nn.Linear`` (weight ``[out, in]``), "kn" for transformers' ``Conv1D``."""
    import torch

    if isinstance(module, torch.nn.Linear):
        return "nk"
    if type(module).__name__ == "Conv1D" and hasattr(module, "nf"):
        return "kn"
    return None


@contextlib.contextmanager
def float_kernels(model_file: str) -> Iterator[str]:
    """A copy of ``model_file``'s graph whose ``MatMulNBits`` compute in float32
    (``accuracy_level`` 0), beside it so that it reads the same weights file; removed after.

    The folder's kernels (``accuracy_level`` 4) round the activations to int8 blocks, noise
    that grows with the model (measured against the quantized reference: 1 % of the largest
    logit on 2-layer models, 4.4 % on a 16-layer 1 B Llama). With float kernels the graph
    computes what the reference computes, so the check can be as tight as fp32's: every
    node but the kernel's own rounding is checked."""
    import onnx

    from .runtime import all_nodes

    model = onnx.load(model_file, load_external_data=False)
    for node in all_nodes(model):
        if node.op_type == "MatMulNBits" and node.domain == "com.microsoft":
            for attribute in node.attribute:
                if attribute.name == "accuracy_level":
                    attribute.i = 0
    path = f"{model_file}.float-kernels.onnx"
    onnx.save(model, path)
    try:
        yield path
    finally:
        os.remove(path)

