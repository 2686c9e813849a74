"""transformers' sparse mixture-of-experts blocks as one onnxruntime ``com.microsoft.MoE``.

A Mixtral, Qwen3-MoE, OLMoE or Qwen2-MoE block is a softmax router (top-k, renormalized or
not) and SiLU-gated experts (plus, in Qwen2-MoE, a gated shared expert, left as it is);
torch.export turns its expert dispatch (sort, histc, two grouped matmuls, the
un-permutation) into some sixty nodes. onnxruntime's ``MoE`` kernel does the routing and the
experts in one node, 1.7-6.5x faster on CPU (bench/bench_moe_fused.py of tonnx-transformers).

A converter sees one op, not a block, so the pack gives the block one op: while the pack is
enabled, ``to_onnx`` enters :func:`export_patches` around ``torch.export``, which routes every
block it can prove equivalent through ``tonnx_ortcontrib::softmax_topk_moe`` (a
``torch.library`` op: its eager kernel computes what the block computes, its fake kernel lets
torch.export trace it), and :func:`convert` writes that op as ``MoE``. A block outside those
conditions (another activation, biases, expert parallelism, not float32, training) keeps
transformers' own forward and the standard-domain graph.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import numpy as np
import torch
from onnx import TensorProto

from tonnx import Converter, UnsupportedError

from . import MS_DOMAIN

OP = "tonnx_ortcontrib::softmax_topk_moe"
KEY = f"{OP}.default"


@torch.library.custom_op(OP, mutates_args=())
def softmax_topk_moe(
    x: torch.Tensor,
    router_logits: torch.Tensor,
    gate_up: torch.Tensor,
    down: torch.Tensor,
    top_k: int,
    normalize: bool,
    concatenated: bool,
) -> torch.Tensor:
    """(T, H) tokens through the top-k of E SiLU-gated experts: ``softmax(router_logits)``,
    its k largest (divided by their sum if ``normalize``) weight the experts' outputs.
    ``gate_up`` is (E, 2I, H), gate rows then up rows (``concatenated``) or interleaved;
    ``down`` is (E, H, I)."""
    probs = torch.softmax(router_logits.float(), dim=-1)
    weights, experts = torch.topk(probs, top_k, dim=-1)
    if normalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    weights = weights.to(x.dtype)
    out = torch.zeros_like(x)
    for e in range(gate_up.shape[0]):
        rows, slot = torch.where(experts == e)
        gate, up = _halves(x[rows] @ gate_up[e].T, concatenated)
        y = (torch.nn.functional.silu(gate) * up) @ down[e].T
        out.index_add_(0, rows, y * weights[rows, slot, None])
    return out


@softmax_topk_moe.register_fake
def _(x, router_logits, gate_up, down, top_k, normalize, concatenated):
    return torch.empty_like(x)


def _halves(gate_up: torch.Tensor, concatenated: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if concatenated:
        return gate_up.chunk(2, dim=-1)
    return gate_up[..., 0::2], gate_up[..., 1::2]


# -- the export patch ----------------------------------------------------------------------


def _routing(block) -> bool | None:
    """Whether the block's router renormalizes its top-k weights; None when the block is
    not one this op computes exactly."""
    gate, experts = getattr(block, "gate", None), getattr(block, "experts", None)
    if gate is None or experts is None or block.training:
        return None
    config = getattr(experts, "config", None)
    if getattr(config, "hidden_act", None) != "silu" or not getattr(experts, "has_gate", False):
        return None
    flags = ("has_bias", "is_transposed", "has_post_expert_norm", "_is_expert_parallel")
    if any(getattr(experts, flag, True) for flag in flags):  # an undecorated class has none
        return None
    from transformers.integrations.moe import _default_apply_gate

    if getattr(type(experts)._apply_gate, "__wrapped__", type(experts)._apply_gate) is not _default_apply_gate:
        return None
    weights = (gate.weight, experts.gate_up_proj, experts.down_proj)
    # a model on the meta device streams its weights at write time: the interleaved copy
    # the converter makes would have nothing to read
    if any(w.dtype != torch.float32 or w.is_meta for w in weights):
        return None
    return bool(getattr(gate, "norm_topk_prob", True))


def _routed_experts(block, x: torch.Tensor, normalize: bool) -> torch.Tensor:
    """The block's router and experts on (T, H) tokens, as the pack's op."""
    logits = torch.nn.functional.linear(x, block.gate.weight)
    experts = block.experts
    return softmax_topk_moe(
        x, logits, experts.gate_up_proj, experts.down_proj, block.gate.top_k, normalize,
        getattr(experts, "is_concatenated", True),
    )  # fmt: skip


def _plain(self, hidden_states: torch.Tensor, normalize: bool) -> torch.Tensor:
    """Mixtral's, Qwen3-MoE's, OLMoE's forward: router, experts, nothing else."""
    batch, length, hidden = hidden_states.shape
    return _routed_experts(self, hidden_states.reshape(-1, hidden), normalize).reshape(batch, length, hidden)


def _with_shared_expert(self, hidden_states: torch.Tensor, normalize: bool) -> torch.Tensor:
    """Qwen2-MoE's forward: the routed experts plus a sigmoid-gated shared expert."""
    batch, length, hidden = hidden_states.shape
    x = hidden_states.view(-1, hidden)
    shared = self.shared_expert(x)
    routed = _routed_experts(self, x, normalize)
    shared = torch.sigmoid(self.shared_expert_gate(x)) * shared
    return (routed + shared).reshape(batch, length, hidden)


def _fused_forward(original, fused):
    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        normalize = _routing(self)
        if normalize is None or hidden_states.dtype != torch.float32:
            return original(self, hidden_states)
        return fused(self, hidden_states, normalize)

    return forward


#: (module, block class, its forward with the op): blocks whose router is softmax, top-k,
#: renormalized (Mixtral: always; the others: when ``norm_topk_prob``)
_BLOCKS = (
    ("transformers.models.mixtral.modeling_mixtral", "MixtralSparseMoeBlock", _plain),
    ("transformers.models.qwen3_moe.modeling_qwen3_moe", "Qwen3MoeSparseMoeBlock", _plain),
    ("transformers.models.olmoe.modeling_olmoe", "OlmoeSparseMoeBlock", _plain),
    ("transformers.models.qwen2_moe.modeling_qwen2_moe", "Qwen2MoeSparseMoeBlock", _with_shared_expert),
)


def _block_classes() -> list[tuple[type, object]]:
    """(class, fused forward) of the blocks of ``_BLOCKS`` already imported (a model using
    them imported them): an export never imports transformers."""
    found = [(sys.modules.get(module), name, fused) for module, name, fused in _BLOCKS]
    return [(getattr(m, name), fused) for m, name, fused in found if m is not None and hasattr(m, name)]


@contextlib.contextmanager
def export_patches() -> Iterator[None]:
    """During the export only: the blocks of :func:`_block_classes` call the fused op."""
    blocks = _block_classes()
    originals = {cls: cls.__dict__["forward"] for cls, _ in blocks}
    try:
        for cls, fused in blocks:
            cls.forward = _fused_forward(originals[cls], fused)
        yield
    finally:
        for cls, forward in originals.items():
            cls.forward = forward


# -- the converter -------------------------------------------------------------------------


def _interleaved(gate_up: np.ndarray, concatenated: bool) -> np.ndarray:
    """(E, 2I, H) with gate and up rows alternating: onnxruntime's ``swiglu_fusion=1``, the
    only SwiGLU layout its CPU kernel accepts. A copy: the export holds the experts' gate/up
    weights twice (the model's, and this one until the model is written)."""
    if not concatenated:
        return gate_up
    inter = gate_up.shape[1] // 2
    fc1 = np.empty_like(gate_up)
    fc1[:, 0::2], fc1[:, 1::2] = gate_up[:, :inter], gate_up[:, inter:]
    return fc1


# tonnx_ortcontrib::softmax_topk_moe
def convert(g, sts, outputs, x, router_logits, gate_up, down, top_k, normalize, concatenated):
    "softmax_topk_moe(Tensor x, Tensor router_logits, Tensor gate_up, Tensor down, int top_k, bool normalize, bool concatenated) -> Tensor"
    if not (g.is_constant(gate_up) and g.is_constant(down)):
        raise UnsupportedError(
            f"{OP}: onnxruntime's MoE needs the experts' weights as initializers; these are "
            "computed in the graph. Block the pack (packs=['no:ortcontrib']) for this model."
        )
    fc1 = g.make_initializer("", _interleaved(g.get_constant(gate_up), concatenated), dedup=False)
    out = g.make_node(
        "MoE", [x, router_logits, fc1, "", down], outputs, domain=MS_DOMAIN, k=int(top_k),
        activation_type="swiglu", swiglu_fusion=1, activation_alpha=1.0, activation_beta=0.0,
        normalize_routing_weights=int(normalize),
    )  # fmt: skip
    g.set_type(out, TensorProto.FLOAT)
    g.set_shape(out, g.get_shape(x))
    return out


def _fits(node) -> bool:
    """float32 tokens and router logits (the patch emits nothing else)."""
    values = [a.meta.get("val") for a in node.args[:4]]
    return all(getattr(v, "dtype", None) == torch.float32 for v in values)


CONVERTERS = (Converter(KEY, convert, applies=_fits),)
