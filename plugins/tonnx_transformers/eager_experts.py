"""Eager experts over every expert, during the export only.

Mixture-of-experts decoders configured with ``experts_implementation="eager"`` loop over
the experts that received tokens, ``for expert_idx in expert_hit``, a tensor whose length
depends on the routing, and ``torch.export`` stops with ``GuardOnDataDependentSymNode: Could
not guard on data-dependent expression Eq(u0, 0)``. During the block, ``"eager"`` in
transformers' experts registry (``ALL_EXPERTS_FUNCTIONS``, through which every
``@use_experts_implementation`` class dispatches) is the same loop over
``range(num_experts)``: each expert still runs on its own tokens only (a ``nonzero`` whose
size the graph leaves free), so the numbers are eager's and so is the compute (the graph
holds one expert block per expert and layer). An ``"eager"`` entry registered by someone
else is left in place.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


def _one_expert(self, expert: int, states):
    """Expert ``expert`` of a ``@use_experts_implementation`` module on ``states`` (its tokens).

    Read from the flags the decorator sets, as transformers' ``batched_mm`` does: weights
    ``(experts, out, in)`` or transposed ``(experts, in, out)``, optional biases, a gated
    projection through the class's ``_apply_gate`` or a plain activation, an optional norm.
    """
    up = "gate_up_proj" if self.has_gate else "up_proj"
    bias = getattr(self, f"{up}_bias")[expert] if self.has_bias else None
    out = _project(self, states, getattr(self, up)[expert], bias)
    out = self._apply_gate(out) if self.has_gate else self.act_fn(out)
    bias = self.down_proj_bias[expert] if self.has_bias else None
    out = _project(self, out, self.down_proj[expert], bias)
    return self.post_expert_norm(out) if self.has_post_expert_norm else out


def _project(self, states, weight, bias):
    import torch

    out = states @ weight if self.is_transposed else torch.nn.functional.linear(states, weight)
    return out if bias is None else out + bias


def eager_experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """transformers' eager experts loop, over ``range(num_experts)`` instead of the experts hit.

    Same ops in the same order as the eager loop (an expert that received no token adds
    nothing), so the same numbers; an expert-parallel sentinel index (``num_experts``) is
    skipped, as there. The sum is out of place (``index_add``, not ``index_add_``).
    """
    import torch

    final = torch.zeros_like(hidden_states)
    for expert in range(self.num_experts):
        top_k_pos, token_idx = torch.where((top_k_index == expert).T)
        out = _one_expert(self, expert, hidden_states[token_idx])
        out = out * top_k_weights[token_idx, top_k_pos, None]
        final = final.index_add(0, token_idx, out.to(final.dtype))
    return final


@contextlib.contextmanager
def every_expert() -> Iterator[None]:
    """Routes ``experts_implementation="eager"`` to :func:`eager_experts_forward`."""
    moe = sys.modules.get("transformers.integrations.moe")
    registry = getattr(moe, "ALL_EXPERTS_FUNCTIONS", None)
    if registry is None or "eager" in registry:
        # no experts class loaded, or "eager" already replaced (by us, outer block, or the user)
        yield
        return
    registry["eager"] = eager_experts_forward
    try:
        yield
    finally:
        if registry.get("eager") is eager_experts_forward:
            del registry["eager"]
