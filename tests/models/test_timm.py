"""timm models exported with tonnx match torch in onnxruntime (issue 31, items 18 and 19).

timm is installed in CI's second environment (.ci/second-env) and the bench environment,
not in the README's: there these tests skip. Models are tiny configurations with random
weights (no download).
"""

from __future__ import annotations

import pytest
import torch

from tonnx.testing import check_model

timm = pytest.importorskip(
    "timm", reason="timm is not installed: CI's second environment and the bench environment have it, the README's does not"
)


def _image(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_vit_resamples_its_position_embeddings():
    """dynamic_img_size resamples the position embeddings with F.interpolate(bicubic,
    antialias=True): aten::_upsample_bicubic2d_aa, up (4x4 to 6x5) and down (to 3x3)."""
    torch.manual_seed(0)
    vit = timm.models.vision_transformer.VisionTransformer(
        img_size=32, patch_size=8, embed_dim=32, depth=1, num_heads=2, num_classes=10, dynamic_img_size=True
    ).eval()
    for size in ((48, 40), (24, 24)):
        check_model(vit, (_image(2, 3, *size),), expect_ops=["aten::_upsample_bicubic2d_aa.vec"])


def _tiny_maxvit_rmlp():
    """maxvit_rmlp_*'s blocks (MBConv, window and grid attention with the relative-position
    MLP bias through scaled_dot_product_attention), two stages, 2x2 partitions."""
    from timm.models.maxxvit import MaxxVit, MaxxVitCfg, _rw_max_cfg

    cfg = MaxxVitCfg(
        embed_dim=(16, 32),
        depths=(1, 1),
        block_type=("M", "M"),
        stem_width=(8, 16),
        **_rw_max_cfg(rel_pos_type="mlp", rel_pos_dim=16, dim_head=8, window_size=(2, 2)),
    )
    torch.manual_seed(0)
    return MaxxVit(cfg, img_size=32, num_classes=10).eval()


def test_maxvit_rmlp_with_a_dynamic_batch():
    """maxvit_rmlp_base_rw_224 differs from eager by 4.1e-4 (2.7e-3 at batch 3, dynamic):
    float32 rounding amplified by its depth, not a wrong op. In float64 the export agrees
    to 1e-8 (the rest is BatchNormalization's float32 epsilon attribute). The small form of
    the same blocks agrees to float32 rounding at static and dynamic batch."""
    model = _tiny_maxvit_rmlp()
    check_model(model, (_image(1, 3, 32, 32),), atol=1e-5, rtol=1e-5)
    check_model(
        model,
        (_image(2, 3, 32, 32),),
        dynamic_shapes=({0: torch.export.Dim("batch")},),
        other_inputs=[(_image(3, 3, 32, 32, seed=1),)],
        atol=1e-5,
        rtol=1e-5,
    )
