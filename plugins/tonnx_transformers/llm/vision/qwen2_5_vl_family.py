"""Qwen2.5-VL's folder: its vision graph's example call, genai_config.json's sections and
the image pipeline onnxruntime-genai's ``qwen2_5_vl`` processor runs.

onnxruntime-genai 0.18 (``QwenImageProcessor``, ``QwenVisionState``, ``Qwen2VLPositionInputs``)
reads: ``model.type`` ``qwen2_5_vl``, the image / video / vision-start token ids, the
vision section's ``spatial_merge_size``, ``patch_size`` and ``window_size``, and the names
of ``pixel_values`` ``[patches, 3*2*14*14]``, ``image_grid_thw`` ``[1, 3]`` and
``image_features``; it computes the decoder's ``position_ids [3, batch, seq]`` itself.
"""

from __future__ import annotations

from typing import Any

from .family import Family, preprocessor

#: the example image's grid (frames, patch rows, patch columns)
GRID = (1, 8, 6)


class Qwen2_5_VL(Family):
    """The ``qwen2_5_vl`` family (transformers' ``Qwen2_5_VLForConditionalGeneration``)."""

    genai_type = "qwen2_5_vl"
    model_class = "Qwen2_5_VLForConditionalGeneration"
    positions_3d = True

    def _vision(self, model: Any) -> tuple[Any, dict, dict]:
        import torch

        from .qwen2_5_vl import VisionEncoder

        # merged 2x2 units of patches: the patch count is a multiple of merge ** 2
        units = torch.export.Dim("units", min=2)
        dynamic = {"pixel_values": {0: model.config.vision_config.spatial_merge_size ** 2 * units},
                   "image_grid_thw": None}
        return VisionEncoder(model.model.visual), self.vision_example(model, seed=None), dynamic

    def vision_example(self, model: Any, seed: int | None = 0) -> dict:
        import torch

        vision = model.config.vision_config
        t, h, w = GRID
        width = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2
        pixels = (torch.zeros(t * h * w, width) if seed is None
                  else torch.randn(t * h * w, width, generator=torch.Generator().manual_seed(seed)))
        return {"pixel_values": pixels, "image_grid_thw": torch.tensor([GRID], dtype=torch.int64)}

    def vision_reference(self, model: Any, inputs: dict) -> Any:
        return model.model.visual(inputs["pixel_values"], grid_thw=inputs["image_grid_thw"]).pooler_output

    def check_prompt(self, model: Any, ids: list, inputs: dict) -> tuple[list, dict]:
        import torch

        config = model.config
        first = ids.index(config.image_token_id)
        last = len(ids) - ids[::-1].index(config.image_token_id)
        ids = ids[:first] + [config.vision_start_token_id] + ids[first:last] + [config.vision_end_token_id] + ids[last:]
        types = (torch.tensor([ids]) == config.image_token_id).int()
        return ids, {"pixel_values": inputs["pixel_values"], "image_grid_thw": inputs["image_grid_thw"],
                     "mm_token_type_ids": types}

    def check_positions(self, model: Any, prompt: list, total: int, seq: int, extra: dict) -> Any:
        """transformers' multimodal positions: the prompt's from ``get_rope_index``, then the
        next ones shifted by its delta (what onnxruntime-genai computes)."""
        import numpy as np
        import torch

        positions, delta = model.model.get_rope_index(
            torch.tensor([prompt]), mm_token_type_ids=extra["mm_token_type_ids"], image_grid_thw=extra["image_grid_thw"])
        if total == 0:
            return positions.numpy().astype(np.int64)
        step = np.arange(total, total + seq, dtype=np.int64) + int(delta[0, 0])
        return np.broadcast_to(step[None, None], (3, 1, seq)).copy()

    def tokens(self, config: Any) -> dict:
        return {"image_token_id": config.image_token_id, "video_token_id": config.video_token_id,
                "vision_start_token_id": config.vision_start_token_id}

    def vision_section(self, config: Any) -> dict:
        vision = config.vision_config
        return {"spatial_merge_size": vision.spatial_merge_size, "patch_size": vision.patch_size,
                "window_size": vision.window_size,
                "inputs": {"pixel_values": "pixel_values", "image_grid_thw": "image_grid_thw"}}

    def processor_config(self, source: str) -> dict:
        from .processor_config import qwen2_vl_pipeline

        return qwen2_vl_pipeline(preprocessor(source))
