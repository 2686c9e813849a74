"""Qwen2.5-VL's folder: its three graphs' example calls, genai_config.json's sections and
the image pipeline onnxruntime-genai's ``qwen2_5_vl`` processor runs.

onnxruntime-genai 0.18 (``QwenImageProcessor``, ``QwenVisionState``, ``Qwen2VLPositionInputs``)
reads: ``model.type`` ``qwen2_5_vl``, the image / video / vision-start token ids, the
vision section's ``spatial_merge_size``, ``patch_size`` and ``window_size``, and the names
of ``pixel_values`` ``[patches, 3*2*14*14]``, ``image_grid_thw`` ``[1, 3]`` and
``image_features``; it computes the decoder's ``position_ids [3, batch, seq]`` itself.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .families import DECODER_FILE
from .genai_config import vlm_genai_config

#: example sizes: every dynamic one 2 or more (torch.export specializes 0 and 1)
BATCH, SEQ, PAST, GRID = 2, 3, 5, (1, 8, 6)


class Qwen2_5_VL:
    """The ``qwen2_5_vl`` family (transformers' ``Qwen2_5_VLForConditionalGeneration``)."""

    genai_type = "qwen2_5_vl"

    def load(self, source: str) -> Any:
        import torch
        import transformers

        return transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(source, dtype=torch.float32).eval()

    def context_length(self, config: Any) -> int:
        return int(config.text_config.max_position_embeddings)

    def part(self, name: str, model: Any) -> tuple[Any, dict, dict]:
        """(module, example kwargs, dynamic shapes) of ``name``: vision, embedding or decoder."""
        return getattr(self, f"_{name}")(model)

    def _vision(self, model: Any) -> tuple[Any, dict, dict]:
        import torch

        from .qwen2_5_vl import VisionEncoder

        vision = model.config.vision_config
        t, h, w = GRID
        width = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2
        kwargs = {"pixel_values": torch.zeros(t * h * w, width),
                  "image_grid_thw": torch.tensor([GRID], dtype=torch.int64)}
        # merged 2x2 units of patches: the patch count is a multiple of merge ** 2
        units = torch.export.Dim("units", min=2)
        dynamic = {"pixel_values": {0: vision.spatial_merge_size ** 2 * units}, "image_grid_thw": None}
        return VisionEncoder(model.model.visual), kwargs, dynamic

    def _embedding(self, model: Any) -> tuple[Any, dict, dict]:
        import torch

        from .qwen2_5_vl import EmbeddingStep

        image = model.config.image_token_id
        ids = torch.tensor([[0, image, image, 0]] * BATCH, dtype=torch.int64)
        kwargs = {"input_ids": ids, "image_features": torch.zeros(2 * BATCH, model.config.text_config.hidden_size)}
        dynamic = {"input_ids": {0: "batch", 1: "sequence"}, "image_features": {0: "image_tokens"}}
        return EmbeddingStep(model.model.language_model.embed_tokens, image), kwargs, dynamic

    def _decoder(self, model: Any) -> tuple[Any, dict, dict]:
        import torch
        from transformers.cache_utils import DynamicCache

        from ..inputs import cache_geometry
        from .qwen2_5_vl import DecoderStep

        text = model.config.text_config
        layers, kv_heads, head_dim = cache_geometry(text)
        shape = (BATCH, kv_heads, PAST, head_dim)
        cache = DynamicCache([(torch.zeros(shape), torch.zeros(shape)) for _ in range(layers)])
        mask = torch.ones(BATCH, PAST + SEQ, dtype=torch.int64)
        positions = (mask.cumsum(-1) - 1)[:, -SEQ:]
        kwargs = {"inputs_embeds": torch.zeros(BATCH, SEQ, text.hidden_size), "attention_mask": mask,
                  "position_ids": positions[None].expand(3, -1, -1).contiguous(), "past_key_values": cache}
        dynamic = {"inputs_embeds": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"},
                   "position_ids": {1: "batch", 2: "sequence"}, "past_key_values": {0: "batch", 2: "past_sequence"}}
        model.config.use_cache = True
        return DecoderStep(model), kwargs, dynamic

    def genai_config(self, model: Any, graphs: dict, context: int) -> dict:
        config, vision = model.config, model.config.vision_config
        return vlm_genai_config(
            graphs["decoder"], config.text_config, model.generation_config, context=context,
            model_type=self.genai_type, decoder_file=DECODER_FILE,
            tokens={"image_token_id": config.image_token_id, "video_token_id": config.video_token_id,
                    "vision_start_token_id": config.vision_start_token_id},
            vision={"filename": "vision.onnx", "spatial_merge_size": vision.spatial_merge_size,
                    "patch_size": vision.patch_size, "window_size": vision.window_size,
                    "inputs": {"pixel_values": "pixel_values", "image_grid_thw": "image_grid_thw"},
                    "outputs": {"image_features": "image_features"}},
            embedding={"filename": "embedding.onnx",
                       "inputs": {"input_ids": "input_ids", "image_features": "image_features"},
                       "outputs": {"inputs_embeds": "inputs_embeds"}})

    def processor_config(self, source: str) -> dict:
        from .processor_config import qwen2_vl_pipeline

        return qwen2_vl_pipeline(_preprocessor(source))

    def verify(self, folder: str, model: Any, plan: Any) -> Any:
        from .verify import check_vision

        return check_vision(folder, model, GRID)


def _preprocessor(source: str) -> dict:
    """The source's ``preprocessor_config.json`` (transformers' image processor settings)."""
    from tonnx import UnsupportedError

    path = os.path.join(source, "preprocessor_config.json")
    if not os.path.isfile(path):
        raise UnsupportedError(
            f"{source!r} has no preprocessor_config.json: onnxruntime-genai's image pipeline is "
            f"written from it (the processor's save_pretrained writes it beside the model).")
    with open(path) as f:
        return json.load(f)
