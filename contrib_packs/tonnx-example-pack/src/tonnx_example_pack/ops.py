"""The custom PyTorch op: ``tonnx_example::soft_clip(Tensor x, float bound) -> Tensor``.

``bound * tanh(x / bound)``: a smooth clip to (-bound, bound). A company's op would have a
fused kernel; the eager kernel here is the formula. The fake kernel tells torch.export the
result's dtype and shape without running it, which is all tracing needs.
"""

from __future__ import annotations

import torch


@torch.library.custom_op("tonnx_example::soft_clip", mutates_args=())
def soft_clip(x: torch.Tensor, bound: float) -> torch.Tensor:
    if bound <= 0:
        raise ValueError(f"soft_clip: bound must be positive, got {bound}")
    return bound * torch.tanh(x / bound)


@soft_clip.register_fake
def _(x: torch.Tensor, bound: float) -> torch.Tensor:
    return torch.empty_like(x)


class SoftClipMLP(torch.nn.Module):
    """Linear -> soft_clip -> Linear: the pack's op between standard (aten) ops."""

    def __init__(self, features: int = 8, bound: float = 2.0):
        super().__init__()
        self.inner = torch.nn.Linear(features, features)
        self.outer = torch.nn.Linear(features, 4)
        self.bound = bound

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(soft_clip(self.inner(x), self.bound))


def demo() -> tuple[torch.nn.Module, tuple]:
    torch.manual_seed(0)
    return SoftClipMLP().eval(), (torch.randn(3, 8) * 3,)
