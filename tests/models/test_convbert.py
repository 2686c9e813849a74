"""ConvBERT's span-based convolution pads the sequence axis between two transposes.

The pad used to be emitted as a Pad with an ``axes`` input; onnxruntime's transpose
optimizer (1.31, 1.32) pushes the Transpose through it and permutes ``pads`` as if they
covered every axis, so the session failed in a Gather ("indices element out of data
bounds, idx=4") at every optimization level above "disabled".
"""

from __future__ import annotations

import pytest
import torch

from tonnx.testing import check_model

transformers = pytest.importorskip("transformers")


class ClassifierLogits(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).logits


def _convbert() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.ConvBertConfig(
        vocab_size=100, hidden_size=32, embedding_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
    )
    return ClassifierLogits(transformers.ConvBertForSequenceClassification(config).eval())


def _inputs(seed: int, batch: int, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[-1, : seq // 3] = 0
    return torch.randint(0, 100, (batch, seq), generator=gen), mask


def test_convbert_static():
    check_model(_convbert(), _inputs(0, 2, 8), atol=1e-5, rtol=1e-4)


def test_convbert_dynamic_batch_and_sequence():
    dims = {0: "batch", 1: "seq"}
    check_model(
        _convbert(), _inputs(0, 2, 8), dynamic_shapes=(dims, dims),
        other_inputs=[_inputs(1, 3, 13)], atol=1e-5, rtol=1e-4,
    )
