"""The check made before a vision-language folder is published: its vision graph against
transformers' image features on random pixel values (the family's example)."""

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
        return (f"vision check: image features of {self.grid} pixel values equal to transformers' within "
                f"{self.max_abs_diff:.3g}")


def check_vision(folder: str, family: Any, model: Any) -> VisionCheck:
    """Runs ``vision.onnx`` on the family's random example against transformers."""
    import numpy as np
    import onnxruntime as ort
    import torch

    inputs = family.vision_example(model)
    with torch.no_grad():
        want = family.vision_reference(model, inputs).numpy()
    session = ort.InferenceSession(os.path.join(folder, "vision.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {k: v.numpy() for k, v in inputs.items()})[0]
    diff = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
    if not diff <= ATOL + RTOL * float(np.abs(want).max()):
        raise GreedyCheckError(
            f"vision.onnx's image features differ from transformers' by {diff:.3g} (shapes {got.shape}, "
            f"{want.shape}); the folder is not written. Report it with the model's config.json.")
    return VisionCheck(diff, tuple(next(iter(inputs.values())).shape))
