"""FastSpeech2-Conformer (tiny config, random weights): the frame count patch
(``plugins/tonnx_transformers/frame_count.py``) lets torch.export trace the model, whose
number of frames comes from its predicted durations; one export runs in onnxruntime for
inputs with other frame counts, matching eager (rows of no frame: the length regulator's
own test)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

import tonnx
from tonnx_transformers import frame_count

transformers = pytest.importorskip("transformers")
modeling = pytest.importorskip(frame_count._MODULE)


class Spectrogram(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        out = self.model(input_ids=input_ids, return_dict=True)
        return out.spectrogram, out.duration_outputs


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    sizes = dict(layers=1, channels=16)
    config = transformers.FastSpeech2ConformerConfig(
        vocab_size=64, hidden_size=16, encoder_layers=1, decoder_layers=1,
        encoder_num_attention_heads=2, decoder_num_attention_heads=2,
        encoder_linear_units=24, decoder_linear_units=24, num_mel_bins=8,
        speech_decoder_postnet_layers=1, speech_decoder_postnet_units=16,
        **{f"{p}_predictor_{k}": v for p in ("duration", "pitch", "energy")
           for k, v in sizes.items()},
    )
    return Spectrogram(transformers.FastSpeech2ConformerModel(config).eval())


def _ids(seed: int) -> torch.Tensor:
    return torch.randint(2, 64, (2, 8), generator=torch.Generator().manual_seed(seed))


def test_fastspeech2_conformer_exports_with_eagers_numbers():
    model = _model()
    onx = tonnx.to_onnx(model, (_ids(0),))
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    frames, diffs = set(), []
    for seed in range(1, 5):
        ids = _ids(seed)
        with torch.no_grad():
            spectrogram, durations = model(ids)
        got = session.run(None, {session.get_inputs()[0].name: ids.numpy()})
        assert got[0].shape == spectrogram.shape
        np.testing.assert_array_equal(got[1], durations.numpy())
        diffs.append(float(np.abs(got[0] - spectrogram.numpy()).max()))
        frames |= set(durations.sum(1).tolist())
    print(f"\n[fastspeech2_conformer] frames {sorted(frames)}, max abs diff {max(diffs):.3g}")
    assert len(frames) > 3  # other counts than the one traced with
    assert max(diffs) <= 1e-4


def test_without_the_patch_torch_export_fails():
    with pytest.raises(GuardOnDataDependentSymNode, match=r"Eq\(u0, 1\)"):
        torch.export.export(_model(), (_ids(0),))


@pytest.mark.parametrize("speed", [1.0, 1.5])
def test_length_regulator_is_eagers(speed):
    gen = torch.Generator().manual_seed(0)
    embeddings = torch.randn(3, 5, 4, generator=gen)
    zeros = torch.zeros(3, 5, dtype=torch.int64)
    for durations in (torch.randint(0, 4, (3, 5), generator=gen), zeros):
        durations[1] = 0  # a row of no frame
        theirs, ours = durations.clone(), durations.clone()
        expected = modeling.length_regulator(embeddings, theirs, speed)
        assert torch.equal(frame_count.length_regulator(embeddings, ours, speed), expected)
        assert torch.equal(ours, theirs)  # all zero: the durations written in place, as eager


def test_patch_scope():
    attention = modeling.FastSpeech2ConformerAttention
    encoding = modeling.FastSpeech2ConformerRelPositionalEncoding
    before = (modeling.length_regulator, encoding.forward, attention.shift_relative_position_tensor)
    with tonnx.export_patches():
        assert modeling.length_regulator is frame_count.length_regulator
        patched = (encoding.forward, attention.shift_relative_position_tensor)
        assert before[1:] != patched
        with tonnx.export_patches():  # nested: a no-op
            assert (encoding.forward, attention.shift_relative_position_tensor) == patched
        # a length known from the shapes runs the module's own code
        x = torch.randn(2, 3, 5, 9)
        assert torch.equal(attention.shift_relative_position_tensor(None, x), before[2](None, x))
    after = (modeling.length_regulator, encoding.forward, attention.shift_relative_position_tensor)
    assert after == before
