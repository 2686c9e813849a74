"""FSMT without cache (tiny config, random weights): the decoder padding mask patch
(``plugins/tonnx_transformers/padding_mask.py``) lets torch.export trace it; onnxruntime
matches eager with and without pad tokens in the decoder input (one export, traced on an input
without pad: the branch eager takes there is not baked in)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

import tonnx
from tonnx_transformers.padding_mask import make_padding_mask

transformers = pytest.importorskip("transformers")
modeling_fsmt = pytest.importorskip("transformers.models.fsmt.modeling_fsmt")

PAD = 1


class Seq2SeqLogits(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        out = self.model(
            input_ids=input_ids, attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids, use_cache=False,
        )
        return out.logits


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.FSMTConfig(
        langs=["en", "de"], src_vocab_size=64, tgt_vocab_size=64, d_model=16,
        encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=24, decoder_ffn_dim=24, max_position_embeddings=32, pad_token_id=PAD,
    )
    return Seq2SeqLogits(transformers.FSMTForConditionalGeneration(config).eval())


def _inputs(batch: int, src: int, tgt: int, *, pads: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Token ids (no pad), the last row's source and decoder ending with ``pads`` pad tokens."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, 64, (batch, src), generator=gen)
    mask = torch.ones(batch, src, dtype=torch.int64)
    decoder = torch.randint(2, 64, (batch, tgt), generator=gen)
    if pads:
        ids[-1, -pads:], mask[-1, -pads:], decoder[-1, -pads:] = PAD, 0, PAD
    return {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": decoder}


def test_fsmt_exports_with_eagers_numbers():
    model = _model()
    onx = tonnx.to_onnx(model, kwargs=_inputs(2, 7, 5, pads=0))  # static shapes: a quick test
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    diffs = []
    for pads, seed in ((2, 1), (0, 2), (1, 3)):
        feeds = _inputs(2, 7, 5, pads=pads, seed=seed)
        with torch.no_grad():
            expected = model(**feeds).numpy()
        got = session.run(None, {k: v.numpy() for k, v in feeds.items()})[0]
        diffs.append(float(np.abs(got - expected).max()))
    print(f"\n[fsmt] max abs diff {max(diffs):.3g}")
    assert max(diffs) <= 1e-5


def test_without_the_patch_torch_export_fails():
    with pytest.raises(GuardOnDataDependentSymNode, match=r"Eq\(u0, 1\)"):
        torch.export.export(_model(), (), kwargs=_inputs(2, 7, 5, pads=0))


def test_patch_scope_and_same_mask():
    original = modeling_fsmt.make_padding_mask
    with tonnx.export_patches():
        assert modeling_fsmt.make_padding_mask is make_padding_mask
        with tonnx.export_patches():  # nested: a no-op
            assert modeling_fsmt.make_padding_mask is make_padding_mask
        assert modeling_fsmt.make_padding_mask is make_padding_mask
    assert modeling_fsmt.make_padding_mask is original
    with_pad = torch.tensor([[5, 6, PAD], [PAD, 3, 4]])
    assert torch.equal(make_padding_mask(with_pad, PAD), original(with_pad, PAD))
    no_pad = torch.tensor([[5, 6, 7]])
    assert original(no_pad, PAD) is None and not make_padding_mask(no_pad, PAD).any()


def test_blocked_pack_leaves_fsmt_alone():
    original = modeling_fsmt.make_padding_mask
    with tonnx.export_patches(dispatcher=tonnx.Dispatcher(packs=["no:transformers"])):
        assert modeling_fsmt.make_padding_mask is original
