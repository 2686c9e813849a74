"""FNet mixes tokens with a 2-D Fourier transform, ``torch.fft.fftn(x, dim=(1, 2)).real``:
through torch's refs that is ``prims::fft_r2c``/``fft_c2c`` on complex pairs, then ONNX
``DFT``. The export was refused before (no converter for the Fourier prims).
"""

from __future__ import annotations

import pytest
import torch

from tonnx.testing import check_model

transformers = pytest.importorskip("transformers")


class LastHiddenState(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids).last_hidden_state


def _fnet() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.FNetConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, intermediate_size=37,
        max_position_embeddings=16, type_vocab_size=2, use_tpu_fourier_optimizations=False,
    )
    return LastHiddenState(transformers.FNetModel(config).eval())


def _ids(seed: int, batch: int, seq: int) -> torch.Tensor:
    return torch.randint(0, 64, (batch, seq), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("opset", [18, 20])
def test_fnet_static(opset):
    onx = check_model(_fnet(), (_ids(0, 2, 7),), target_opset=opset, atol=1e-4, rtol=1e-4)
    assert "DFT" in {n.op_type for n in onx.graph.node}


def test_fnet_dynamic_batch_and_sequence():
    seq = torch.export.Dim("seq", max=16)  # the position embeddings bound it
    check_model(
        _fnet(), (_ids(0, 2, 7),), dynamic_shapes=({0: torch.export.Dim("batch"), 1: seq},),
        other_inputs=[(_ids(1, 3, 11),)], atol=1e-4, rtol=1e-4,
    )
