"""The two models ``tonnx demo`` exports, in plain torch (no transformers needed)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    """A pre-norm decoder block: causal self-attention and a GELU MLP."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (y.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class TinyTransformer(nn.Module):
    """Token ids (batch, seq) -> next-token logits (batch, seq, vocab)."""

    def __init__(self, vocab: int = 1000, dim: int = 64, heads: int = 4, layers: int = 2, max_len: int = 128):
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, dim), nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.embed(input_ids) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class TinyCNN(nn.Module):
    """Images (batch, 3, 32, 32) -> class logits (batch, 10)."""

    def __init__(self, width: int = 16, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(2 * width, classes)

    def forward(self, images):
        return self.classifier(self.features(images).flatten(1))


def transformer():
    """The model, its inputs, dynamic shapes, and inputs of other sizes to check."""
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (2, 16))
    return (TinyTransformer().eval(), (ids,), {"input_ids": {0: "batch", 1: "seq"}},
            [(torch.randint(0, 1000, (3, 37)),)])


def cnn():
    torch.manual_seed(0)
    model = TinyCNN().eval()
    with torch.no_grad():  # non-trivial running statistics
        for bn in (model.features[1], model.features[5]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
    return model, (torch.randn(2, 3, 32, 32),), {"images": {0: "batch"}}, [(torch.randn(5, 3, 32, 32),)]
