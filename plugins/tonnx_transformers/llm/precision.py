"""Precision of the folder's weights, chosen before the export and applied while it writes.

- ``fp32``: the model as transformers computes it.
- ``fp16``: the model is built in float16 (its float32 or bfloat16 checkpoint tensors cast
  one at a time as they are read) and exported in float16: every op of the graph computes
  in float16 where torch does. onnxruntime's CPU EP runs it (MatMul, GroupQueryAttention,
  RotaryEmbedding, the elementwise ops have float16 CPU kernels since at least 1.31.1).
- ``int8``, ``int4``: weight-only quantization of the linear layers to
  ``com.microsoft.MatMulNBits`` (see ``quantize.py``), done while the weights are written;
  activations and norms stay float32; so does an untied embedding, while a tied one is
  gathered from the lm head's quantized table (``GatherBlockQuantized``, as the builder).
- ``bf16``: refused. onnxruntime's CPU EP has no bfloat16 kernel for MatMul, Gemm, Add,
  Mul, Div, Pow, Sqrt, Neg, Sigmoid, Where, ReduceMean, ReduceMax (measured on 1.31.1 and
  1.32.0): such a folder would not open on the CPU, and this machine cannot check it on
  another EP. ``fp16`` is the half-size float folder that runs here.

The greedy check then compares the written model with transformers' float32 logits at the
precision's tolerance, ``atol + rtol * max |logit|`` per step (verify.py). int8 and int4 are
compared with transformers holding the folder's quantized weights, the graph's MatMulNBits
computing in float32, at fp32's tolerance (``quantized_reference.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tonnx import UnsupportedError

#: what onnxruntime's CPU EP lacks for a bfloat16 graph (kernels measured missing)
BF16_MISSING_CPU_KERNELS = (
    "MatMul", "Gemm", "Add", "Mul", "Div", "Pow", "Sqrt", "Neg", "Sigmoid", "Where",
    "ReduceMean", "ReduceMax",
)


@dataclass(frozen=True)
class Precision:
    name: str
    #: the dtype the model is built and exported in
    dtype: str
    #: MatMulNBits bits of the linear layers (None: not quantized)
    bits: int | None
    #: greedy check tolerance of a step: ``atol + rtol * max |logit|`` (verify.py)
    atol: float
    rtol: float


PRECISIONS = {
    # measured: at most 2e-5 of the step's largest |logit| (a 4-layer Llama, hidden 512,
    # initializer_range 0.2, logits up to 23; issue 31 item 15)
    "fp32": Precision("fp32", "float32", None, 1e-4, 1e-4),
    # measured: 0.2 % to 0.7 % of max |logit| (the tests' tiny models, the Llama above)
    "fp16": Precision("fp16", "float16", None, 0.0, 0.02),
    # against transformers with the folder's quantized weights, MatMulNBits in float32
    # (quantized_reference.py): as exact as fp32 (measured 2.2e-5 on a 1 B Llama; 2e-5 of
    # max |logit| on the Llama above)
    "int8": Precision("int8", "float32", 8, 1e-4, 1e-4),
    "int4": Precision("int4", "float32", 4, 1e-4, 1e-4),
}
REFUSED = ("bf16",)


def check_precision(precision: str, block_size: int | None = None) -> Precision:
    """The :class:`Precision` named, or a typed error saying why it is not written."""
    from .quantize import BLOCK_SIZES

    if precision == "bf16":
        raise UnsupportedError(
            f"--precision bf16: onnxruntime's CPU execution provider has no bfloat16 kernel for "
            f"{', '.join(BF16_MISSING_CPU_KERNELS)} (onnxruntime 1.31.1 and 1.32.0), so the "
            f"folder would not run on the CPU and cannot be checked here. Use --precision fp16 "
            f"(half-size float weights that run on the CPU), int8 or int4."
        )
    if precision not in PRECISIONS:
        raise UnsupportedError(
            f"--precision {precision!r}: export-llm writes {', '.join(PRECISIONS)}."
        )
    spec = PRECISIONS[precision]
    if block_size is not None and (spec.bits is None or block_size not in BLOCK_SIZES):
        where = "int4 and int8 only" if spec.bits is None else f"one of {BLOCK_SIZES}"
        raise UnsupportedError(
            f"--block-size {block_size} with --precision {precision}: the block size is for "
            f"{where} (MatMulNBits' block_size is a power of two from 16 to 256)."
        )
    return spec


def torch_dtype(spec: Precision) -> Any:
    import torch

    return getattr(torch, spec.dtype)


def export_options(spec: Precision, src: Any, block_size: int | None) -> tuple[Any, list, Any]:
    """(weights=, the extra packs the precision needs, the QuantPlan or None) for ``to_onnx``."""
    from tonnx.toolkit import SafetensorsWeights

    if spec.bits is None:
        weights = SafetensorsWeights(src.weights, src.aliases, cast_floats=True) if src.weights else None
        return _with_stacked(weights, src), [], None
    from .quantize import DEFAULT_BLOCK_SIZE, QuantizingWeights, QuantPlan, quantize_pack
    from .quantize_experts import experts_down_names
    from .quantized_reference import unquantized_weights

    plan = QuantPlan(bits=spec.bits, block_size=block_size or DEFAULT_BLOCK_SIZE,
                     keep_float=unquantized_weights(src.model), experts_down=experts_down_names(src.model))
    weights = QuantizingWeights(src.weights, src.aliases, plan, cast_floats=True) if src.weights else None
    return _with_stacked(weights, src), [quantize_pack(plan)], plan


def _with_stacked(weights: Any, src: Any) -> Any:
    """The weights source, also computing the model's stacked experts from the checkpoint."""
    return weights.with_derivations(src.stacked) if weights is not None and src.stacked else weights
