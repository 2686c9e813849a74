"""The check made before a vision-language folder is published: its vision graph against
transformers' vision tower on a random image of a few patches."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..verify import GreedyCheckError

#: the image features' tolerance: atol + rtol * max |feature| (float32 in both)
ATOL, RTOL = 1e-4, 1e-4


@dataclass
class VisionCheck:
    max_abs_diff: float
    grid: tuple

    def line(self) -> str:
        return (f"vision check: image features of a {self.grid} grid equal to transformers' within "
                f"{self.max_abs_diff:.3g}")


def check_vision(folder: str, model: Any, grid: tuple) -> VisionCheck:
    """Runs ``vision.onnx`` on random patches of ``grid`` against ``model.model.visual``."""
    import numpy as np
    import onnxruntime as ort
    import torch

    vision = model.config.vision_config
    t, h, w = grid
    width = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2
    pixels = torch.randn(t * h * w, width, generator=torch.Generator().manual_seed(0))
    thw = torch.tensor([grid], dtype=torch.int64)
    with torch.no_grad():
        want = model.model.visual(pixels, grid_thw=thw).pooler_output.numpy()
    session = ort.InferenceSession(os.path.join(folder, "vision.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {"pixel_values": pixels.numpy(), "image_grid_thw": thw.numpy()})[0]
    diff = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
    if not diff <= ATOL + RTOL * float(np.abs(want).max()):
        raise GreedyCheckError(
            f"vision.onnx's image features differ from transformers' by {diff:.3g} (shapes {got.shape}, "
            f"{want.shape}); the folder is not written. Report it with the model's config.json.")
    return VisionCheck(diff, tuple(grid))
