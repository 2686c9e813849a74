"""Mistral3 (Pixtral vision tower, patch merger, Mistral decoder) as genai's ``mistral3`` graphs.

- ``vision``: ``pixel_values [1, 3, H, W]`` (H, W multiples of ``patch_size *
  spatial_merge_size``) -> ``image_features [H/28 * W/28, hidden]``: transformers' vision
  tower (its own forward: one image, sizes from the pixel tensor's shape) then its
  projector, whose patch merger reads the grid from ``image_sizes`` values in transformers
  (a Python loop and ``view(h, w, d)``); here the grid is the pixel tensor's shape, so the
  graph keeps every image size.
- ``embedding``: as Qwen2.5-VL's (:class:`.qwen2_5_vl.EmbeddingStep`), at the ``[IMG]`` tokens.
- ``decoder``: the Mistral language model and its head (:class:`.qwen2_5_vl.DecoderStep`)
  on ``inputs_embeds`` with 1-D ``position_ids`` (genai's default positions).
"""

from __future__ import annotations

from typing import Any

import torch


class VisionEncoder(torch.nn.Module):
    """Vision tower, then the multimodal projector, for one image of any size."""

    def __init__(self, model: Any):
        super().__init__()
        self.vision_tower = model.model.vision_tower
        self.projector = model.model.multi_modal_projector
        self.patch = int(model.config.vision_config.patch_size)
        self.merge = int(model.config.spatial_merge_size)

    def forward(self, pixel_values: torch.Tensor) -> dict:
        hidden = self.vision_tower(pixel_values).last_hidden_state[0]
        projector, m = self.projector, self.merge
        h, w = pixel_values.shape[2] // self.patch, pixel_values.shape[3] // self.patch
        x = projector.norm(hidden)
        d = x.shape[-1]
        # transformers' unfold of the (h, w) grid by m x m blocks, as a reshape: each merged
        # token holds its block's features channel-major (d, m, m), in row-major block order
        grid = x.reshape(h // m, m, w // m, m, d).permute(0, 2, 4, 1, 3).reshape(-1, d * m * m)
        x = projector.patch_merger.merging_layer(grid)
        x = projector.linear_2(projector.act(projector.linear_1(x)))
        return {"image_features": x}
