"""Mistral3's folder (Pixtral vision tower, Mistral decoder) for onnxruntime-genai's ``mistral3``.

onnxruntime-genai 0.18 (``Mistral3ImageProcessor``, ``PixtralVisionState``) reads: the
``[IMG]``, ``[IMG_BREAK]``, ``[IMG_END]`` tokens from the tokenizer (each image becomes
rows of ``[IMG]`` ended by ``[IMG_BREAK]``, the last by ``[IMG_END]``, as transformers'
processor writes them), the vision section's ``patch_size`` and ``spatial_merge_size``, and
``pixel_values [1, 3, H, W]`` with H and W multiples of ``patch_size * spatial_merge_size``;
the decoder's positions are genai's default 1-D ones.
"""

from __future__ import annotations

from typing import Any

from .family import Family, preprocessor

#: the example image's size in pixels (multiples of patch_size * spatial_merge_size)
SIZE = (56, 84)


class Mistral3(Family):
    """The ``mistral3`` family (transformers' ``Mistral3ForConditionalGeneration``)."""

    genai_type = "mistral3"
    model_class = "Mistral3ForConditionalGeneration"

    def load(self, source: str) -> Any:
        from tonnx import UnsupportedError

        model = super().load(source)
        if model.config.vision_feature_layer != -1:
            raise UnsupportedError(
                f"{source!r}: vision_feature_layer {model.config.vision_feature_layer!r}: export-llm writes "
                f"Mistral3 models whose projector reads the vision tower's last layer (-1).")
        return model

    def _vision(self, model: Any) -> tuple[Any, dict, dict]:
        import torch

        from .mistral3 import VisionEncoder

        side = model.config.vision_config.patch_size * model.config.spatial_merge_size
        dynamic = {"pixel_values": {2: side * torch.export.Dim("rows", min=2),
                                    3: side * torch.export.Dim("columns", min=2)}}
        return VisionEncoder(model), self.vision_example(model, seed=None), dynamic

    def vision_example(self, model: Any, seed: int | None = 0) -> dict:
        import torch

        shape = (1, model.config.vision_config.num_channels, *SIZE)
        pixels = torch.zeros(shape) if seed is None else torch.randn(shape, generator=torch.Generator().manual_seed(seed))
        return {"pixel_values": pixels}

    def vision_reference(self, model: Any, inputs: dict) -> Any:
        import torch

        pixels = inputs["pixel_values"]
        sizes = torch.tensor([list(pixels.shape[2:])])
        return model.model.get_image_features(pixel_values=pixels, image_sizes=sizes).pooler_output[0]

    def check_prompt(self, model: Any, ids: list, inputs: dict) -> tuple[list, dict]:
        import torch

        pixels = inputs["pixel_values"]
        return ids, {"pixel_values": pixels, "image_sizes": torch.tensor([list(pixels.shape[2:])])}

    def vision_section(self, config: Any) -> dict:
        return {"patch_size": config.vision_config.patch_size, "spatial_merge_size": config.spatial_merge_size,
                "inputs": {"pixel_values": "pixel_values"}}

    def processor_config(self, source: str) -> dict:
        from .processor_config import pixtral_pipeline

        return pixtral_pipeline(preprocessor(source), merge=self._merge(source))

    @staticmethod
    def _merge(source: str) -> int:
        import json
        import os

        with open(os.path.join(source, "config.json")) as f:
            return int(json.load(f).get("spatial_merge_size", 2))
