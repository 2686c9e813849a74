"""Qwen2.5-VL as the three graphs onnxruntime-genai's ``qwen2_5_vl`` pipeline runs.

- ``vision``: ``pixel_values [patches, 3*2*14*14]``, ``image_grid_thw [1, 3]`` ->
  ``image_features [patches / 4, hidden]``, transformers' ``get_image_features``.
- ``embedding``: ``input_ids [batch, seq]``, ``image_features [tokens, hidden]`` ->
  ``inputs_embeds``: the token table, each image token replaced by the next feature row
  (transformers' ``masked_scatter``), in the prompt only.
- ``decoder``: ``inputs_embeds``, ``attention_mask``, ``position_ids [3, batch, seq]`` (the
  multimodal rotary positions genai computes from ``image_grid_thw``), the cache ->
  ``logits``, the presents.

Why the vision encoder is rewritten here rather than traced as it is: transformers computes
its rotary positions, its attention windows and the per-window attention from
``grid_thw.tolist()`` (Python loops, ``torch.split`` by data-dependent lengths), so a trace
would keep one image size. :class:`VisionEncoder` computes the same numbers from tensors:
each patch's (frame, row, column) is arithmetic on its index and the grid, the windows are
an attention mask (patches attend to the patches of their window, or of their frame in the
full-attention layers) instead of a reordering into contiguous chunks. The reordering of
transformers (``window_index``, undone after the merger) is then not needed: attention with
a mask is the same for any order of the patches, the MLPs work per patch and the merger
merges the 2x2 patches of one unit, which both orders keep together. Only the order of the
sums in the softmax differs (float rounding). The blocks' own modules (norms, qkv, proj, mlp,
merger) are called as they are.
"""

from __future__ import annotations

from typing import Any

import torch


class VisionEncoder(torch.nn.Module):
    """transformers' Qwen2.5-VL vision tower for any one image (or clip), traceable."""

    def __init__(self, visual: Any):
        super().__init__()
        self.visual = visual
        config = visual.config
        self.merge = int(config.spatial_merge_size)
        self.window = int(config.window_size) // self.merge // int(config.patch_size)
        self.full = frozenset(int(i) for i in config.fullatt_block_indexes)
        self.heads = int(config.num_heads)

    def forward(self, pixel_values: torch.Tensor, image_grid_thw: torch.Tensor) -> dict:
        visual, m = self.visual, self.merge
        grid = image_grid_thw[0]
        h, w = grid[1], grid[2]
        x = visual.patch_embed(pixel_values)
        index = torch.arange(x.shape[0], device=x.device)
        # transformers' patch order: frame, unit row, unit column, then the m x m patches
        inner, unit = index % (m * m), index // (m * m)
        units_w, units_hw = w // m, (h // m) * (w // m)
        frame, in_frame = unit // units_hw, unit % units_hw
        unit_h, unit_w = in_frame // units_w, in_frame % units_w
        row, col = unit_h * m + inner // m, unit_w * m + inner % m
        cos, sin = visual.rotary_pos_emb(x, torch.stack([row, col], dim=-1))
        windows = (unit_h // self.window) * units_w + unit_w // self.window  # unique per window
        masks = {True: _segments_mask([frame], x.dtype), False: _segments_mask([frame, windows], x.dtype)}
        for i, block in enumerate(visual.blocks):
            x = x + _attention(block.attn, block.norm1(x), cos, sin, masks[i in self.full], self.heads)
            x = x + block.mlp(block.norm2(x))
        return {"image_features": visual.merger(x)}


def _segments_mask(segments: list, dtype: Any) -> torch.Tensor:
    """``[1, 1, n, n]`` additive mask: 0 where two patches share every segment, -inf elsewhere."""
    same = segments[0][:, None] == segments[0][None, :]
    for segment in segments[1:]:
        same = same & (segment[:, None] == segment[None, :])
    return torch.zeros(same.shape, dtype=dtype).masked_fill(~same, float("-inf"))[None, None]


def _attention(attn: Any, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor,
               heads: int) -> torch.Tensor:
    """``Qwen2_5_VLVisionAttention.forward`` with a mask in place of its chunks."""
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import apply_rotary_pos_emb_vision

    n = x.shape[0]
    q, k, v = attn.qkv(x).reshape(n, 3, heads, -1).permute(1, 0, 2, 3).unbind(0)
    q, k = apply_rotary_pos_emb_vision(q, k, cos, sin)
    q, k, v = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=attn.scaling)
    return attn.proj(out[0].transpose(0, 1).reshape(n, -1))


class EmbeddingStep(torch.nn.Module):
    """Token embeddings with the image features in place of the image tokens."""

    def __init__(self, embed_tokens: Any, image_token_id: int):
        super().__init__()
        self.embed_tokens = embed_tokens
        self.image_token_id = int(image_token_id)

    def forward(self, input_ids: torch.Tensor, image_features: torch.Tensor) -> dict:
        embeds = self.embed_tokens(input_ids)
        is_image = input_ids == self.image_token_id
        # the k-th image token takes row k; a row of zeros keeps the gather valid with no rows
        rows = torch.cumsum(is_image.reshape(-1).to(torch.int64), dim=0) - 1
        padded = torch.cat([image_features.to(embeds.dtype), embeds.new_zeros(1, embeds.shape[-1])])
        picked = padded[rows.clamp(min=0)].reshape(embeds.shape)
        # only the prompt's image tokens, one per feature row: genai hands the prompt's
        # features to every step, and an image token the model generates is a plain token
        # to transformers (its pixel_values are for the prompt only)
        prompt = (rows[-1] + 1 == image_features.shape[0]) & (input_ids.shape[1] > 1)
        return {"inputs_embeds": torch.where(is_image[..., None] & prompt, picked, embeds)}


class DecoderStep(torch.nn.Module):
    """The language model and its head on ``inputs_embeds``, one step with a cache (the
    decoder of every family: its positions are what the family's example call gives)."""

    def __init__(self, model: Any):
        import inspect

        super().__init__()
        self.language_model = model.model.language_model
        self.lm_head = model.lm_head
        self.config = model.config.text_config
        # transformers 5.24 calls the cache argument ``cache``, 5.23 ``past_key_values``
        parameters = inspect.signature(self.language_model.forward).parameters
        self.cache_argument = "cache" if "cache" in parameters else "past_key_values"

    def forward(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                past_key_values: Any) -> dict:
        out = self.language_model(inputs_embeds=inputs_embeds, attention_mask=attention_mask,
                                  position_ids=position_ids, use_cache=True,
                                  **{self.cache_argument: past_key_values})
        presents = out.cache if hasattr(out, "cache") else out.past_key_values
        return {"logits": self.lm_head(out.last_hidden_state), "past_key_values": presents}
