"""transformers' sparse mixture-of-experts blocks as one onnxruntime ``com.microsoft.MoE``.

A Mixtral, Qwen3-MoE, OLMoE, Qwen2-MoE or GPT-OSS block is a softmax router (top-k,
renormalized or not) and SwiGLU experts (plus, in Qwen2-MoE, a gated shared expert, left as
it is); DeepSeek-V3's and V2's routers are their own (sigmoid or softmax, group-limited
top-k), their weights positive. torch.export turns the expert dispatch (sort, histc, two
grouped matmuls, the un-permutation) into some sixty nodes. onnxruntime's ``MoE`` kernel does the routing and the
experts in one node, 1.7-6.5x faster on CPU (bench/bench_moe_fused.py of tonnx-transformers).

A converter sees one op, not a block, so the pack gives the block one op: while the pack is
enabled, ``to_onnx`` enters :func:`export_patches` around ``torch.export``, which routes every
block it can prove equivalent through ``tonnx_ortcontrib::softmax_topk_moe`` (a
``torch.library`` op: its eager kernel computes what the block computes, its fake kernel lets
torch.export trace it), and :func:`convert` writes that op as ``MoE``. A router onnxruntime
does not have (DeepSeek's) stays in the graph: ``tonnx_ortcontrib::routed_moe`` takes its
choice, and :func:`convert_routed` gives ``MoE`` the chosen experts' log-weights (the others
-inf), whose softmax is each weight over their sum, and multiplies the sum back. A block outside those
conditions (another gate, expert parallelism, not float32, meta weights, training) keeps
transformers' own forward and the standard-domain graph.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

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
    transposed: bool = False,
    gate_up_bias: torch.Tensor | None = None,
    down_bias: torch.Tensor | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    limit: float | None = None,
) -> torch.Tensor:
    """(T, H) tokens through the top-k of E SwiGLU experts: ``softmax(router_logits)``, its k
    largest (divided by their sum if ``normalize``) weight the experts' outputs.

    ``gate_up`` is (E, 2I, H) (``transposed``: (E, H, 2I)), gate then up (``concatenated``)
    or interleaved; ``down`` is (E, H, I) (``transposed``: (E, I, H)). The gate is
    ``gate * sigmoid(alpha * gate) * (up + beta)``, gate clamped to ``limit`` from above and
    up to ``[-limit, limit]`` when ``limit`` is given (GPT-OSS)."""
    probs = torch.softmax(router_logits.float(), dim=-1)
    weights, experts = torch.topk(probs, top_k, dim=-1)
    if normalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    layout = (concatenated, transposed, gate_up_bias, down_bias, alpha, beta, limit)
    return _mixture(x, experts, weights.to(x.dtype), gate_up, down, *layout)


def _mixture(x, experts, weights, gate_up, down, concatenated, transposed, gate_up_bias, down_bias, alpha, beta, limit):
    """Each token through its ``experts``, outputs summed with their ``weights``."""
    out = torch.zeros_like(x)
    for e in range(gate_up.shape[0]):
        rows, slot = torch.where(experts == e)
        h = x[rows] @ (gate_up[e] if transposed else gate_up[e].T)
        if gate_up_bias is not None:
            h = h + gate_up_bias[e]
        y = _swiglu(*_halves(h, concatenated), alpha, beta, limit) @ (down[e] if transposed else down[e].T)
        if down_bias is not None:
            y = y + down_bias[e]
        out.index_add_(0, rows, y * weights[rows, slot, None])
    return out


@softmax_topk_moe.register_fake
def _(x, router_logits, gate_up, down, top_k, normalize, concatenated, *args, **kwargs):
    return torch.empty_like(x)


def _halves(gate_up: torch.Tensor, concatenated: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if concatenated:
        return gate_up.chunk(2, dim=-1)
    return gate_up[..., 0::2], gate_up[..., 1::2]


def _swiglu(gate, up, alpha: float, beta: float, limit: float | None) -> torch.Tensor:
    if limit is not None:
        gate, up = gate.clamp(max=limit), up.clamp(min=-limit, max=limit)
    if alpha == 1.0 and beta == 0.0:
        return torch.nn.functional.silu(gate) * up
    return gate * torch.sigmoid(gate * alpha) * (up + beta)


ROUTED = "tonnx_ortcontrib::routed_moe"
ROUTED_KEY = f"{ROUTED}.default"


@torch.library.custom_op(ROUTED, mutates_args=())
def routed_moe(
    x: torch.Tensor,
    top_k_index: torch.Tensor,
    top_k_weights: torch.Tensor,
    gate_up: torch.Tensor,
    down: torch.Tensor,
    concatenated: bool,
) -> torch.Tensor:
    """(T, H) tokens through the SiLU-gated experts a router chose: token t goes to experts
    ``top_k_index[t]`` weighted by ``top_k_weights[t]`` (positive: the block's router says
    so). ``gate_up`` is (E, 2I, H), ``down`` (E, H, I)."""
    return _mixture(x, top_k_index, top_k_weights, gate_up, down, concatenated, False, None, None, 1.0, 0.0, None)


@routed_moe.register_fake
def _(x, top_k_index, top_k_weights, gate_up, down, concatenated):
    return torch.empty_like(x)


# -- the export patch ----------------------------------------------------------------------


def _experts_layout(experts, *, bias: bool, transposed: bool) -> bool:
    """True for decorated experts of this layout, on float32 weights (in memory or on
    ``meta``: the converter derives its layouts as the file is written), not sharded."""
    flags = {"has_bias": bias, "is_transposed": transposed, "has_post_expert_norm": False, "_is_expert_parallel": False}
    if any(getattr(experts, name, None) is not value for name, value in flags.items()):
        return False  # an undecorated class has no flags
    if not getattr(experts, "has_gate", False) or getattr(experts, "training", True):
        return False
    names = ("gate_up_proj", "down_proj", *(("gate_up_proj_bias", "down_proj_bias") if bias else ()))
    return all(getattr(experts, n).dtype == torch.float32 for n in names)


def _own_parts(block, *parts) -> bool:
    """True when the router and experts are the classes of the block's own modeling file
    (a user's subclass may route or gate otherwise)."""
    return all(type(part).__module__ == type(block).__module__ for part in parts)


def _silu_experts(experts) -> bool:
    """``silu(gate) * up`` experts without biases, transformers' default gate."""
    if getattr(getattr(experts, "config", None), "hidden_act", None) != "silu":
        return False
    if not _experts_layout(experts, bias=False, transposed=False):
        return False
    from transformers.integrations.moe import _default_apply_gate

    gate = type(experts)._apply_gate
    return getattr(gate, "__wrapped__", gate) is _default_apply_gate


def _silu_spec(block) -> dict | None:
    """Mixtral / Qwen / OLMoE: SiLU experts, softmax router."""
    experts, router = block.experts, block.gate
    if not _own_parts(block, router, experts) or not type(router).__name__.endswith("TopKRouter"):
        return None
    if not _silu_experts(experts) or router.weight.dtype != torch.float32:
        return None
    return {
        "normalize": bool(getattr(router, "norm_topk_prob", True)),
        "concatenated": getattr(experts, "is_concatenated", True),
    }


#: DeepSeek's routers: V3 sigmoid scores, V2 softmax ones, top-k (group-limited or not)
_DEEPSEEK_ROUTERS = ("DeepseekV3TopkRouter", "DeepseekV2TopkRouter")


def _deepseek_spec(block) -> dict | None:
    """DeepSeek-V3 and V2: SiLU experts; the router (sigmoid or softmax scores, top-k,
    scaled by a positive factor) gives positive weights, which :func:`routed_moe` needs."""
    experts, router = block.experts, block.gate
    if not _own_parts(block, router, experts) or type(router).__name__ not in _DEEPSEEK_ROUTERS:
        return None
    if not _silu_experts(experts) or not router.routed_scaling_factor > 0:
        return None
    return {"concatenated": getattr(experts, "is_concatenated", True)}


def _gpt_oss_spec(block) -> dict | None:
    """GPT-OSS: biases, transposed interleaved weights, the clamped SwiGLU of its own
    ``_apply_gate``; its router's softmax over the top-k logits is the renormalized top-k
    of the softmax."""
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssExperts, GptOssTopKRouter

    experts, router = block.experts, block.router
    if type(experts) is not GptOssExperts or type(router) is not GptOssTopKRouter:
        return None  # a subclass may gate or route otherwise
    if not _experts_layout(experts, bias=True, transposed=True) or getattr(experts, "is_concatenated", True):
        return None
    if any(w.dtype != torch.float32 for w in (router.weight, router.bias)):
        return None
    return {
        "normalize": True, "concatenated": False, "transposed": True, "gate_up_bias": experts.gate_up_proj_bias,
        "down_bias": experts.down_proj_bias, "alpha": float(experts.alpha), "beta": 1.0, "limit": float(experts.limit),
    }  # fmt: skip


def _moe(experts, x: torch.Tensor, logits: torch.Tensor, top_k: int, spec: dict) -> torch.Tensor:
    """The op on the block's experts; ``spec``: the op's keyword arguments for this block."""
    return softmax_topk_moe(x, logits, experts.gate_up_proj, experts.down_proj, top_k, **spec)


def _plain(self, hidden_states: torch.Tensor, spec: dict) -> torch.Tensor:
    """Mixtral's, Qwen3-MoE's, OLMoE's forward: router, experts, nothing else."""
    batch, length, hidden = hidden_states.shape
    x = hidden_states.reshape(-1, hidden)
    logits = torch.nn.functional.linear(x, self.gate.weight)
    return _moe(self.experts, x, logits, self.gate.top_k, spec).reshape(batch, length, hidden)


def _with_shared_expert(self, hidden_states: torch.Tensor, spec: dict) -> torch.Tensor:
    """Qwen2-MoE's forward: the routed experts plus a sigmoid-gated shared expert."""
    batch, length, hidden = hidden_states.shape
    x = hidden_states.view(-1, hidden)
    shared = self.shared_expert(x)
    routed = _moe(self.experts, x, torch.nn.functional.linear(x, self.gate.weight), self.gate.top_k, spec)
    shared = torch.sigmoid(self.shared_expert_gate(x)) * shared
    return (routed + shared).reshape(batch, length, hidden)


def _gpt_oss(self, hidden_states: torch.Tensor, spec: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """GPT-OSS's forward: (output, the router's scores), as its block returns them."""
    batch, length, hidden = hidden_states.shape
    x = hidden_states.reshape(-1, hidden)
    logits, scores, _ = self.router(x)
    return _moe(self.experts, x, logits, self.router.top_k, spec).reshape(batch, length, hidden), scores


def _deepseek(self, hidden_states: torch.Tensor, spec: dict) -> torch.Tensor:
    """DeepSeek-V3's and V2's forward: its router, the routed experts as one op, the shared experts."""
    residuals, shape = hidden_states, hidden_states.shape
    _, weights, indices = self.gate(hidden_states)
    x = hidden_states.view(-1, hidden_states.shape[-1])
    experts = self.experts
    routed = routed_moe(x, indices, weights, experts.gate_up_proj, experts.down_proj, **spec)
    return routed.view(*shape) + self.shared_experts(residuals)


def _fused_forward(original, spec_of: Callable, fused: Callable):
    def forward(self, hidden_states: torch.Tensor):
        spec = None if self.training or hidden_states.dtype != torch.float32 else spec_of(self)
        if spec is None:
            return original(self, hidden_states)
        return fused(self, hidden_states, spec)

    return forward


#: (module, block class, what proves the block computable, its forward with the op); the
#: routers are softmax, top-k, renormalized (Mixtral, GPT-OSS: always; the others: when
#: ``norm_topk_prob``)
_BLOCKS = (
    ("transformers.models.mixtral.modeling_mixtral", "MixtralSparseMoeBlock", _silu_spec, _plain),
    ("transformers.models.qwen3_moe.modeling_qwen3_moe", "Qwen3MoeSparseMoeBlock", _silu_spec, _plain),
    ("transformers.models.olmoe.modeling_olmoe", "OlmoeSparseMoeBlock", _silu_spec, _plain),
    ("transformers.models.qwen2_moe.modeling_qwen2_moe", "Qwen2MoeSparseMoeBlock", _silu_spec, _with_shared_expert),
    ("transformers.models.gpt_oss.modeling_gpt_oss", "GptOssMLP", _gpt_oss_spec, _gpt_oss),
    ("transformers.models.deepseek_v3.modeling_deepseek_v3", "DeepseekV3MoE", _deepseek_spec, _deepseek),
    ("transformers.models.deepseek_v2.modeling_deepseek_v2", "DeepseekV2Moe", _deepseek_spec, _deepseek),
)

def _block_classes() -> list[tuple[type, Callable, Callable]]:
    """(class, spec, fused forward) of the blocks of ``_BLOCKS`` already imported (a model
    using them imported them): an export never imports transformers."""
    found = [(sys.modules.get(module), name, spec, fused) for module, name, spec, fused in _BLOCKS]
    return [(getattr(m, name), spec, fused) for m, name, spec, fused in found if m is not None and hasattr(m, name)]


@contextlib.contextmanager
def export_patches() -> Iterator[None]:
    """During the export only: the blocks of :func:`_block_classes` call the fused op."""
    blocks = _block_classes()
    originals = {cls: cls.__dict__["forward"] for cls, _, _ in blocks}
    try:
        for cls, spec, fused in blocks:
            cls.forward = _fused_forward(originals[cls], spec, fused)
        yield
    finally:
        for cls, forward in originals.items():
            cls.forward = forward


# -- the converter -------------------------------------------------------------------------


def _interleaved(gate_up: np.ndarray, concatenated: bool) -> np.ndarray:
    """Gate and up rows alternating along axis 1 ((E, 2I, H) weights, (E, 2I) biases):
    onnxruntime's ``swiglu_fusion=1``, the only SwiGLU layout its CPU kernel accepts."""
    if not concatenated:
        return gate_up
    inter = gate_up.shape[1] // 2
    fc1 = np.empty_like(gate_up)
    fc1[:, 0::2], fc1[:, 1::2] = gate_up[:, :inter], gate_up[:, inter:]
    return fc1


def _derived(g, weight: str, layout, transposed: bool) -> str:
    """An initializer ``layout(weight)`` in C order: computed now when the weight is in
    memory, else when the file is written (a folder streamed from its checkpoint)."""
    shape = list(g.get_shape(weight))
    if transposed:
        shape[1], shape[2] = shape[2], shape[1]
    # float32 only: the converters apply to nothing else (_fits, _fits_routed)
    return g.make_derived_initializer([weight], lambda w: np.ascontiguousarray(layout(w)), tuple(shape), torch.float32)


# tonnx_ortcontrib::softmax_topk_moe
def convert(
    g, sts, outputs, x, router_logits, gate_up, down, top_k, normalize, concatenated,
    transposed=False, gate_up_bias=None, down_bias=None, alpha=1.0, beta=0.0, limit=None,
):  # fmt: skip
    "softmax_topk_moe(Tensor x, Tensor router_logits, Tensor gate_up, Tensor down, int top_k, bool normalize, bool concatenated, bool transposed=False, Tensor? gate_up_bias=None, Tensor? down_bias=None, float alpha=1., float beta=0., float? limit=None) -> Tensor"
    weights = [w for w in (gate_up, down, gate_up_bias, down_bias) if w is not None]
    if not all(g.is_initializer(w) for w in weights):
        raise UnsupportedError(
            f"{OP}: onnxruntime's MoE needs the experts' weights as initializers; these are "
            "computed in the graph. Block the pack (packs=['no:ortcontrib']) for this model."
        )
    fc1 = _derived(g, gate_up, lambda w: _interleaved(w.transpose(0, 2, 1) if transposed else w, concatenated),
                   transposed)
    inputs = [x, router_logits, fc1, "", down, ""]
    if transposed:
        inputs[4] = _derived(g, down, lambda w: w.transpose(0, 2, 1), transposed)
    if gate_up_bias is not None:
        inputs[3] = _derived(g, gate_up_bias, lambda b: _interleaved(b, concatenated), False)
    if down_bias is not None:
        inputs[5] = down_bias
    attributes = {"swiglu_limit": float(limit)} if limit is not None else {}
    out = g.make_node(
        "MoE", inputs, outputs, domain=MS_DOMAIN, k=int(top_k), activation_type="swiglu", swiglu_fusion=1,
        activation_alpha=float(alpha), activation_beta=float(beta), normalize_routing_weights=int(normalize),
        **attributes,
    )  # fmt: skip
    g.set_type(out, TensorProto.FLOAT)
    g.set_shape(out, g.get_shape(x))
    return out


# tonnx_ortcontrib::softmax_topk_moe, for onnxruntime before 1.32
def convert_renormalized(
    g, sts, outputs, x, router_logits, gate_up, down, top_k, normalize, concatenated,
    transposed=False, gate_up_bias=None, down_bias=None, alpha=1.0, beta=0.0, limit=None,
):  # fmt: skip
    "softmax_topk_moe(Tensor x, Tensor router_logits, Tensor gate_up, Tensor down, int top_k, bool normalize, bool concatenated, bool transposed=False, Tensor? gate_up_bias=None, Tensor? down_bias=None, float alpha=1., float beta=0., float? limit=None) -> Tensor"
    # onnxruntime 1.31's MoE returns zeros with normalize_routing_weights=0 when it runs in
    # place over its input (_target.py): the renormalized op, times the top-k weights' sum
    layout = (concatenated, transposed, gate_up_bias, down_bias, alpha, beta, limit)
    if normalize:
        return convert(g, sts, outputs, x, router_logits, gate_up, down, top_k, True, *layout)
    moe = convert(g, sts, 1, x, router_logits, gate_up, down, top_k, True, *layout)
    probs = g.op.Softmax(router_logits, axis=-1)
    largest, _ = g.op.TopK(probs, np.array([top_k], dtype=np.int64), axis=-1, outputs=2)
    last = g.get_rank(router_logits) - 1  # from the front: 1.31.1 reduces empty inputs wrong over -1
    total = g.op.ReduceSum(largest, np.array([last], dtype=np.int64), keepdims=1)
    return g.op.Mul(moe, total, outputs=outputs)


#: the smallest normal float32: log() of a weight clamped to it is finite
_TINY = np.finfo(np.float32).tiny


# tonnx_ortcontrib::routed_moe
def convert_routed(g, sts, outputs, x, top_k_index, top_k_weights, gate_up, down, concatenated):
    "routed_moe(Tensor x, Tensor top_k_index, Tensor top_k_weights, Tensor gate_up, Tensor down, bool concatenated) -> Tensor"
    return _routed(g, outputs, x, top_k_index, top_k_weights, gate_up, down, concatenated, renormalize=False)


# tonnx_ortcontrib::routed_moe, for onnxruntime before 1.32
def convert_routed_renormalized(g, sts, outputs, x, top_k_index, top_k_weights, gate_up, down, concatenated):
    "routed_moe(Tensor x, Tensor top_k_index, Tensor top_k_weights, Tensor gate_up, Tensor down, bool concatenated) -> Tensor"
    # onnxruntime 1.31's MoE returns zeros with normalize_routing_weights=0 when it runs in
    # place over its input (_target.py)
    return _routed(g, outputs, x, top_k_index, top_k_weights, gate_up, down, concatenated, renormalize=True)


def _routed(g, outputs, x, top_k_index, top_k_weights, gate_up, down, concatenated: bool, *, renormalize: bool):
    """MoE over the router's choice; ``renormalize``: MoE divides the weights (which sum to
    1 already) by their sum again, the form exact on onnxruntime before 1.32."""
    if not (g.is_initializer(gate_up) and g.is_initializer(down)):
        raise UnsupportedError(
            f"{ROUTED}: onnxruntime's MoE needs the experts' weights as initializers; these are "
            "computed in the graph. Block the pack (packs=['no:ortcontrib']) for this model."
        )
    # onnxruntime's MoE routes by softmax over its router input: the chosen experts get
    # log(weight), the others -inf, and softmax gives weight / sum (renormalized or not: the
    # k chosen already sum to 1, up to rounding); the sum multiplies back
    experts, top_k = g.get_shape(gate_up)[0], g.get_shape(top_k_index)[1]
    rows = g.op.Concat(g.op.Shape(x, start=0, end=1), np.array([experts], dtype=np.int64), axis=0)
    masked = g.op.Expand(np.array(-np.inf, dtype=np.float32), rows)
    logs = g.op.Log(g.op.Max(top_k_weights, np.array(_TINY, dtype=np.float32)))
    logits = g.op.ScatterElements(masked, top_k_index, logs, axis=1)
    fc1 = _derived(g, gate_up, lambda w: _interleaved(w, concatenated), False)
    moe = g.make_node(
        "MoE", [x, logits, fc1, "", down], 1, domain=MS_DOMAIN, k=int(top_k), activation_type="swiglu",
        swiglu_fusion=1, activation_alpha=1.0, activation_beta=0.0, normalize_routing_weights=int(renormalize),
    )  # fmt: skip
    g.set_type(moe, TensorProto.FLOAT)
    g.set_shape(moe, g.get_shape(x))
    total = g.op.ReduceSum(top_k_weights, np.array([1], dtype=np.int64), keepdims=1)
    return g.op.Mul(moe, total, outputs=outputs)


def _fits_routed(node) -> bool:
    """float32 tokens, weights and experts, a static top-k."""
    values = [a.meta.get("val") for a in node.args[:5]]
    if not all(hasattr(v, "dtype") for v in values) or type(values[1].shape[1]) is not int:
        return False
    return all(v.dtype == torch.float32 for i, v in enumerate(values) if i != 1)


def _fits(node) -> bool:
    """float32 tokens, router logits and weights (the patch emits nothing else)."""
    values = [a.meta.get("val") for a in node.args[:4]]
    return all(getattr(v, "dtype", None) == torch.float32 for v in values)


def converters(target) -> tuple[Converter, ...]:
    """The converters for ``target`` (:mod:`._target`): before onnxruntime 1.32 the op's
    weights are always renormalized by MoE and the sum multiplied back; their predicates'
    docstrings (printed by ``tonnx explain``) say which form."""

    def fits(node) -> bool:
        return _fits(node)

    def fits_routed(node) -> bool:
        return _fits_routed(node)

    if target.unnormalized_moe:
        form, softmax, routed = "MoE, unnormalized weights as they are", convert, convert_routed
    else:
        form = "MoE with renormalized weights times their sum (1.31's MoE, unnormalized, may return zeros)"
        softmax, routed = convert_renormalized, convert_routed_renormalized
    fits.__doc__ = f"{target}: {form} (float32 tokens, router logits and weights)"
    fits_routed.__doc__ = f"{target}: {form} (float32, a static top-k; the router's choice as log-weights)"
    return (Converter(KEY, softmax, applies=fits), Converter(ROUTED_KEY, routed, applies=fits_routed))
