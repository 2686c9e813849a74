"""D-FINE (and DEIMv2, RT-DETR v2, which share it): transformers' ``torch_compilable_check``.

Under torch.export the check becomes ``torch._check_tensor_all``: an ``aten::_is_all_true``
whose ``.item()`` feeds ``torch.sym_ite`` and runtime asserts. Both were refused before
(``ConverterNotFoundError``), so none of these models converted. The test exports D-FINE's
multiscale deformable attention (the layer holding the check) from a small config with random
weights and compares it with eager in onnxruntime; the whole model takes ~80 s to export on
a loaded CI machine (torch.export and its functionalization), this layer a few seconds.
"""

from __future__ import annotations

import pytest
import torch

from tonnx.testing import check_model

transformers = pytest.importorskip("transformers")
d_fine = pytest.importorskip("transformers.models.d_fine.modeling_d_fine")

SPATIAL = [(8, 8), (4, 4), (2, 2)]


class DeformableAttention(torch.nn.Module):
    """The layer with its spatial shapes as a buffer (the model computes them from the backbone)."""

    def __init__(self) -> None:
        super().__init__()
        config = transformers.DFineConfig(
            d_model=32, decoder_attention_heads=2, decoder_n_points=[2, 2, 2], num_feature_levels=3
        )
        self.attention = d_fine.DFineMultiscaleDeformableAttention(config).eval()
        self.register_buffer("spatial_shapes", torch.tensor(SPATIAL, dtype=torch.int64))

    def forward(self, hidden_states, reference_points, encoder_hidden_states):
        output, weights = self.attention(
            hidden_states,
            reference_points=reference_points,
            encoder_hidden_states=encoder_hidden_states,
            spatial_shapes=self.spatial_shapes,
            spatial_shapes_list=SPATIAL,
        )
        return output, weights


def test_deformable_attention_with_its_check():
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = DeformableAttention()
    length = sum(h * w for h, w in SPATIAL)
    args = (
        torch.randn(2, 10, 32, generator=gen),
        torch.rand(2, 10, 1, 4, generator=gen),
        torch.randn(2, length, 32, generator=gen),
    )
    ep = torch.export.export(model, args)
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert "aten._is_all_true.default" in targets  # the check is in the graph
    check_model(model, args, expect_ops=["aten::_is_all_true.default"], atol=1e-5, rtol=1e-5)
