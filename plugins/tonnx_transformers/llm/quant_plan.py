"""One export's quantization plan, and the initializers a rule adds for a quantized weight.

Shared by the linear layers' rules (``quantize.py``) and the experts' (``quantize_experts.py``):
both add a weight's (packed, scales) parts through :func:`add_parts`, which computes them at
once for a weight in memory and records a ``meta`` placeholder for one streamed from
safetensors (filled by ``quantize.QuantizingWeights`` as the file is written).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MS_DOMAIN = "com.microsoft"
#: onnxruntime-genai's builder default for the CPU EP: int8 activations inside MatMulNBits
CPU_ACCURACY_LEVEL = 4
DEFAULT_BLOCK_SIZE = 32
BLOCK_SIZES = (16, 32, 64, 128, 256)
#: the oldest onnxruntime running MatMulNBits with bits 4 and 8 on the CPU EP as written
#: here, measured (tests/transformers_pack/test_export_llm_precision.py); also the oldest
#: the ortcontrib pack supports, so no older one is tested
MIN_ONNXRUNTIME = "1.31.1"


@dataclass
class QuantPlan:
    """The quantization of one export: its settings, and each placeholder's origin."""

    bits: int
    block_size: int = DEFAULT_BLOCK_SIZE
    accuracy_level: int = CPU_ACCURACY_LEVEL
    #: placeholder initializer name -> (weight name, weight's meta value, layout, part)
    pending: dict[str, tuple[str, Any, str, str]] = field(default_factory=dict)
    #: placeholder name -> the layout of the weight it quantizes ("nk" or "kn")
    layouts: dict[str, str] = field(default_factory=dict)
    #: how many MatMuls the rule rewrote
    rewritten: int = 0
    #: 2-D weights left in float32: the ones the greedy check's reference cannot quantize
    #: (a router's weight, read by ``F.linear`` in a module that is no linear layer)
    keep_float: frozenset[str] = frozenset()
    #: the experts' ``down_proj`` names whose ``MoE`` may become ``QMoE`` (quantize_experts.py)
    experts_down: dict[str, Any] = field(default_factory=dict)
    #: those that did
    experts_rewritten: set[str] = field(default_factory=set)
    #: tied tables whose Gather became GatherBlockQuantized (the lm head's quantized weight)
    gathered: set[str] = field(default_factory=set)

    def quantize(self, weight, layout: str):
        """(packed uint8, scales float32) of a float32 weight, by onnxruntime's quantizer:
        ``[N, blocks, blob]`` and ``[N, blocks]`` for a weight given ``[N, K]``
        (``layout="nk"``) or ``[K, N]``; ``[E, N, blocks * blob]`` and ``[E, N, blocks]``
        for experts ``[E, N, K]`` (``layout="experts"``: each quantized as an ``[N, K]``
        weight, what ``QMoE`` holds and the greedy check's reference dequantizes)."""
        import numpy as np
        import torch
        from onnxruntime.quantization.matmul_nbits_quantizer import (
            DefaultWeightOnlyQuantConfig,
            DefaultWeightOnlyQuantizer,
        )

        if layout == "experts":
            parts = [self.quantize(expert, "nk") for expert in weight]
            packed = np.stack([p for p, _ in parts])
            return packed.reshape(*packed.shape[:2], -1), np.stack([s for _, s in parts])
        w = weight.detach() if isinstance(weight, torch.Tensor) else torch.from_numpy(np.asarray(weight))
        # the quantizer reads [K, N]; torch's blocked transpose copies an [N, K] weight 2.5x
        # faster than numpy's (0.09 vs 0.23 s for 5632 x 2048, measured)
        w = (w.t() if layout == "nk" else w).to(torch.float32).contiguous().numpy()
        config = DefaultWeightOnlyQuantConfig(block_size=self.block_size, is_symmetric=True, bits=self.bits)
        packed, scales, _ = DefaultWeightOnlyQuantizer(config).qbits_block_quant(w)
        return packed, scales

    def shapes(self, k: int, n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        blocks = (k + self.block_size - 1) // self.block_size
        return (n, blocks, self.block_size * self.bits // 8), (n, blocks)


def add_parts(plan: QuantPlan, g, weight: str, value, layout: str, names: tuple[str, str],
              shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[str, str]:
    """The (packed, scales) initializers ``names`` of ``weight`` quantized in ``layout``:
    computed now when ``value`` holds data, else ``meta`` placeholders of ``shapes`` that
    ``quantize.QuantizingWeights`` fills as the file is written (``plan.pending``)."""
    import torch

    from tonnx.toolkit import has_data

    q_name, s_name = names
    if has_data(value):
        packed, scales = plan.quantize(value, layout)
        return g.make_initializer(q_name, packed, dedup=False), g.make_initializer(s_name, scales, dedup=False)
    q_shape, s_shape = shapes
    g.make_initializer(q_name, torch.empty(q_shape, dtype=torch.uint8, device="meta"), dedup=False)
    g.make_initializer(s_name, torch.empty(s_shape, dtype=torch.float32, device="meta"), dedup=False)
    plan.pending[q_name] = (weight, value, layout, "packed")
    plan.pending[s_name] = (weight, value, layout, "scales")
    return q_name, s_name
