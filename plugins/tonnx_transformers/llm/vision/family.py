"""What the vision-language families share: the embedding and decoder steps' example calls,
genai_config.json's assembly, the vision check. A family (``qwen2_5_vl_family.py``,
``mistral3_family.py``) adds its vision graph, its config sections and its image pipeline."""

from __future__ import annotations

import json
import os
from typing import Any

from .families import DECODER_FILE
from .genai_config import vlm_genai_config

#: example sizes: every dynamic one 2 or more (torch.export specializes 0 and 1)
BATCH, SEQ, PAST = 2, 3, 5


class Family:
    """A vision-language family; subclasses set the class attributes and the vision part."""

    #: model.type in genai_config.json
    genai_type: str = ""
    #: transformers' class name of the model
    model_class: str = ""
    #: position_ids of the decoder: [3, batch, seq] (multimodal rotary) or [batch, seq]
    positions_3d: bool = False

    def load(self, source: str) -> Any:
        import torch
        import transformers

        cls = getattr(transformers, self.model_class)
        return cls.from_pretrained(source, dtype=torch.float32).eval()

    def context_length(self, config: Any) -> int:
        return int(config.text_config.max_position_embeddings)

    def part(self, name: str, model: Any) -> tuple[Any, dict, dict]:
        """(module, example kwargs, dynamic shapes) of ``name``: vision, embedding or decoder."""
        return getattr(self, f"_{name}")(model)

    def _embedding(self, model: Any) -> tuple[Any, dict, dict]:
        import torch

        from .qwen2_5_vl import EmbeddingStep

        image = model.config.image_token_id
        ids = torch.tensor([[0, image, image, 0]] * BATCH, dtype=torch.int64)
        kwargs = {"input_ids": ids, "image_features": torch.zeros(2 * BATCH, model.config.text_config.hidden_size)}
        dynamic = {"input_ids": {0: "batch", 1: "sequence"}, "image_features": {0: "image_tokens"}}
        return EmbeddingStep(model.get_input_embeddings(), image), kwargs, dynamic

    def _decoder(self, model: Any) -> tuple[Any, dict, dict]:
        import torch
        from transformers.cache_utils import DynamicCache

        from ..inputs import cache_geometry

        text = model.config.text_config
        layers, kv_heads, head_dim = cache_geometry(text)
        shape = (BATCH, kv_heads, PAST, head_dim)
        cache = DynamicCache([(torch.zeros(shape), torch.zeros(shape)) for _ in range(layers)])
        mask = torch.ones(BATCH, PAST + SEQ, dtype=torch.int64)
        positions = (mask.cumsum(-1) - 1)[:, -SEQ:]
        kwargs = {"inputs_embeds": torch.zeros(BATCH, SEQ, text.hidden_size), "attention_mask": mask,
                  "position_ids": positions, "past_key_values": cache}
        dynamic = {"inputs_embeds": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"},
                   "position_ids": {0: "batch", 1: "sequence"}, "past_key_values": {0: "batch", 2: "past_sequence"}}
        if self.positions_3d:
            kwargs["position_ids"] = positions[None].expand(3, -1, -1).contiguous()
            dynamic["position_ids"] = {1: "batch", 2: "sequence"}
        model.config.use_cache = True
        return self.decoder_step(model), kwargs, dynamic

    def decoder_step(self, model: Any) -> Any:
        from .qwen2_5_vl import DecoderStep

        return DecoderStep(model)

    def genai_config(self, model: Any, graphs: dict, context: int) -> dict:
        return vlm_genai_config(
            graphs["decoder"], model.config.text_config, model.generation_config, context=context,
            model_type=self.genai_type, decoder_file=DECODER_FILE, tokens=self.tokens(model.config),
            vision={"filename": "vision.onnx", **self.vision_section(model.config),
                    "outputs": {"image_features": "image_features"}},
            embedding={"filename": "embedding.onnx",
                       "inputs": {"input_ids": "input_ids", "image_features": "image_features"},
                       "outputs": {"inputs_embeds": "inputs_embeds"}})

    def tokens(self, config: Any) -> dict:
        return {"image_token_id": config.image_token_id}

    def vision_section(self, config: Any) -> dict:
        raise NotImplementedError

    def processor_config(self, source: str) -> dict:
        raise NotImplementedError

    def vision_example(self, model: Any) -> dict:
        """Random inputs of the vision graph, for the check before publishing."""
        raise NotImplementedError

    def vision_reference(self, model: Any, inputs: dict) -> Any:
        """transformers' image features for ``vision_example``'s inputs."""
        raise NotImplementedError

    def check_prompt(self, model: Any, ids: list, inputs: dict) -> tuple[list, dict]:
        """(the check's prompt ids, transformers' generate() keywords for the image ``inputs``)."""
        raise NotImplementedError

    def check_positions(self, model: Any, prompt: list, total: int, seq: int, extra: dict) -> Any:
        """The decoder's ``position_ids`` for ``seq`` tokens after ``total`` (1-D positions)."""
        import numpy as np

        return np.arange(total, total + seq, dtype=np.int64)[None]

    def verify(self, folder: str, model: Any, plan: Any) -> Any:
        from .verify import check_vision

        return check_vision(folder, self, model, plan)


def preprocessor(source: str) -> dict:
    """The source's ``preprocessor_config.json`` (transformers' image processor settings)."""
    from tonnx import UnsupportedError

    path = os.path.join(source, "preprocessor_config.json")
    if not os.path.isfile(path):
        raise UnsupportedError(
            f"{source!r} has no preprocessor_config.json: onnxruntime-genai's image pipeline is "
            f"written from it (the processor's save_pretrained writes it beside the model).")
    with open(path) as f:
        return json.load(f)
