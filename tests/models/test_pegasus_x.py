"""PEGASUS-X (small config, random weights) through tonnx and onnxruntime matches torch.

With transformers 5.23 its encoder's sinusoidal positions are computed in a
``@torch.no_grad()`` method that fills a fresh table through two slice writes and returns a
view of it: torch.export keeps the method as a ``wrap_with_set_grad_enabled`` subgraph,
whose writes tonnx dropped (positions all zero; logits 1.04 and encoder states 3.86 away).
transformers 5.24 removed the decorator, which is why the newer environment matched.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tonnx
from tonnx.testing import run_onnxruntime

from .transformer_models import _ids, _mask, _seeded

transformers = pytest.importorskip("transformers")


class LogitsAndEncoder(torch.nn.Module):
    """``input_ids, attention_mask, decoder_input_ids -> logits, encoder_last_hidden_state``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            use_cache=False,
        )
        return out.logits, out.encoder_last_hidden_state


def pegasus_x(seed: int = 0, batch: int = 2, seq: int = 12, dec_seq: int = 5):
    config = transformers.PegasusXConfig(
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        vocab_size=1000,
        max_position_embeddings=256,
    )
    gen = _seeded(seed)
    model = transformers.PegasusXForConditionalGeneration(config).eval()
    args = (_ids(gen, 1000, batch, seq), _mask(batch, seq), _ids(gen, 1000, batch, dec_seq))
    return LogitsAndEncoder(model).eval(), args


@pytest.mark.parametrize("packs", [None, ["no:ortcontrib"]], ids=["default", "no-ortcontrib"])
def test_pegasus_x_matches_torch(packs):
    model, args = pegasus_x()
    dispatcher = tonnx.Dispatcher(packs=packs) if packs else None
    onx = tonnx.to_onnx(model, args, dispatcher=dispatcher)
    with torch.no_grad():
        expected = model(*args)
    got = run_onnxruntime(onx, list(args))
    diffs = [float(np.abs(e.numpy() - g).max()) for e, g in zip(expected, got)]
    print(f"\n[PegasusX transformers {transformers.__version__}] max abs diffs {diffs}")
    assert len(got) == 2 and max(diffs) <= 1e-4, diffs
