"""The checks made before a vision-language folder is published, in onnxruntime.

1. ``vision.onnx`` against transformers' image features on random pixel values (the
   family's example).
2. Greedy generation: a prompt holding those image features' tokens runs through
   ``embedding.onnx`` and ``model.onnx`` as onnxruntime-genai runs them (the prompt's
   features to every step, an empty cache first, then one token a step, presents fed back)
   against transformers' ``generate`` on the same pixels; every step's logits must agree
   within ``atol + rtol * max |logit|`` and give transformers' token (or one that ties
   with it within that bound), as the text path's check (``..verify``). The positions are
   the family's (Qwen2.5-VL's multimodal ones from transformers' ``get_rope_index``, which
   onnxruntime-genai computes alike). int4 / int8 are compared with transformers holding
   the folder's quantized decoder weights, the graph's ``MatMulNBits`` in float32.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..verify import GreedyCheckError, compare_steps

#: the image features' tolerance: atol + rtol * max |feature| (float32 in both)
ATOL, RTOL = 1e-4, 1e-4
#: text tokens around the image in the check's prompt, and the tokens generated
TEXT, NEW_TOKENS = [5, 17, 42, 7], 8


@dataclass
class VisionCheck:
    vision_diff: float
    shape: tuple
    tokens: list
    max_abs_diff: float

    def line(self) -> str:
        return (f"vision check: image features of {self.shape} pixel values equal to transformers' within "
                f"{self.vision_diff:.3g}; greedy check with the image: {len(self.tokens)} steps, tokens equal "
                f"to transformers' generate(), logits max abs diff {self.max_abs_diff:.3g}")


def check_vision(folder: str, family: Any, model: Any, plan: Any = None) -> VisionCheck:
    """Both checks on the staging ``folder``; a GreedyCheckError when one fails."""
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
    tokens, worst = _check_generation(folder, family, model, plan, inputs, got)
    return VisionCheck(diff, tuple(next(iter(inputs.values())).shape), tokens, worst)


def _check_generation(folder: str, family: Any, model: Any, plan: Any, inputs: dict, features: Any) -> tuple:
    import torch

    from ..quantized_reference import float_kernels, quantized_reference

    image = [model.config.image_token_id] * features.shape[0]
    prompt, extra = family.check_prompt(model, TEXT[:2] + image + TEXT[2:], inputs)
    if plan is not None:
        quantized_reference(family.decoder_step(model), plan)
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS,
                             min_new_tokens=NEW_TOKENS, do_sample=False, output_logits=True,
                             return_dict_in_generate=True, pad_token_id=0, **extra)
    tokens = out.sequences[0, len(prompt):].tolist()
    want = [step[0].float().numpy() for step in out.logits]
    with float_kernels(os.path.join(folder, "model.onnx")) as decoder:
        got = _run_steps(folder, decoder, family, model, prompt, tokens, features, extra)
    worst = compare_steps(want, got, tokens, atol=ATOL, rtol=RTOL, what="greedy generation with an image")
    return tokens, worst


def _run_steps(folder: str, decoder: str, family: Any, model: Any, prompt: list, tokens: list, features: Any,
               extra: dict) -> list:
    """Last-position logits of each step, the three graphs fed as onnxruntime-genai feeds them."""
    import numpy as np
    import onnxruntime as ort

    options = dict(providers=["CPUExecutionProvider"])
    embedding = ort.InferenceSession(os.path.join(folder, "embedding.onnx"), **options)
    session = ort.InferenceSession(decoder, **options)
    past = {}
    for info in session.get_inputs():
        if info.name.startswith("past"):
            _, heads, _, size = info.shape
            past[info.name] = np.zeros((1, heads, 0, size), dtype=np.float32)
    outputs = [o.name for o in session.get_outputs()]
    step_ids, total, logits = np.array([prompt], dtype=np.int64), 0, []
    for token in tokens:
        seq = step_ids.shape[1]
        embeds = embedding.run(None, {"input_ids": step_ids, "image_features": features})[0]
        feeds = {"inputs_embeds": embeds, "attention_mask": np.ones((1, total + seq), dtype=np.int64),
                 "position_ids": family.check_positions(model, prompt, total, seq, extra), **past}
        result = dict(zip(outputs, session.run(None, feeds)))
        logits.append(result["logits"][0, -1].astype(np.float32))
        past = {k.replace("present", "past_key_values", 1): v for k, v in result.items() if k.startswith("present")}
        total += seq
        step_ids = np.array([[token]], dtype=np.int64)
    return logits
