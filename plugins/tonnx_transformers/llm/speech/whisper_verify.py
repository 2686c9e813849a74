"""The check made before a Whisper folder is published: greedy tokens from audio features.

transformers' ``generate`` gives the tokens and each step's logits for seeded features
(``[1, mels, 3000]``) and the decoder start token; onnxruntime runs the written graphs as
onnxruntime-genai runs them: the encoder once, then the decoder with an empty
self-attention cache and the encoder's cross cache, one token a step, presents fed back.
Every step's logits must agree within ``atol + rtol * max |logit|`` and give the same token
(or a tie within that bound), as for causal LMs (``llm/verify.py``).

onnxruntime-genai 0.18 has no setting for the generation config's ``suppress_tokens`` and
``begin_suppress_tokens`` (Whisper's generate masks those ids) nor forced ids: the check
runs transformers without them, which is what the folder computes. With them a real
checkpoint's generate may pick another token where a suppressed one wins.
"""

from __future__ import annotations

import copy
from typing import Any

from ..verify import GreedyCheck, compare_steps
from . import whisper_steps as steps

NEW_TOKENS = 8
SEED = 0


def check_whisper(encoder_file: str, decoder_file: str, reference: Any, *, atol: float, rtol: float,
                  against: str = "transformers' generate() without suppress_tokens") -> GreedyCheck:
    """Runs the two graphs in onnxruntime against ``reference`` (a WhisperForConditionalGeneration)."""
    import torch

    config = reference.config
    generator = torch.Generator().manual_seed(SEED)
    features = torch.randn(1, config.num_mel_bins, 2 * config.max_source_positions, generator=generator)
    prompt = torch.tensor([[config.decoder_start_token_id]], dtype=torch.int64)
    with torch.no_grad():
        out = reference.generate(input_features=features, decoder_input_ids=prompt,
                                 generation_config=_plain(reference.generation_config),
                                 return_dict_in_generate=True)
    tokens = out.sequences[0, -NEW_TOKENS:].tolist()
    want = [step[0].float().numpy() for step in out.logits]
    got = run_steps(encoder_file, decoder_file, features.numpy(), prompt.numpy(), tokens)
    worst = compare_steps(want, got, tokens, atol=atol, rtol=rtol, what="Whisper's greedy generation")
    return GreedyCheck(tokens, worst, len(tokens), against)


def _plain(generation: Any) -> Any:
    """The generation config for greedy tokens without the masks onnxruntime-genai lacks."""
    plain = copy.deepcopy(generation)
    plain.suppress_tokens = plain.begin_suppress_tokens = plain.forced_decoder_ids = None
    plain.do_sample, plain.num_beams = False, 1
    plain.max_new_tokens = plain.min_new_tokens = NEW_TOKENS
    plain.output_logits = True
    return plain


def run_steps(encoder_file: str, decoder_file: str, features: Any, prompt: Any, tokens: list[int]) -> list:
    """Last-position logits of each decoder step, the graphs fed as onnxruntime-genai feeds them."""
    import numpy as np
    import onnxruntime as ort

    providers = ["CPUExecutionProvider"]
    encoder = ort.InferenceSession(encoder_file, providers=providers)
    decoder = ort.InferenceSession(decoder_file, providers=providers)
    encoded = dict(zip([o.name for o in encoder.get_outputs()], encoder.run(None, {steps.AUDIO_FEATURES: features})))
    cross = {name.replace("present", "past", 1): value for name, value in encoded.items() if name.startswith("present")}
    past = {}
    for info in decoder.get_inputs():
        if info.name.startswith("past_key_self") or info.name.startswith("past_value_self"):
            _, heads, _, size = info.shape
            past[info.name] = np.zeros((features.shape[0], heads, 0, size), dtype=np.float32)
    outputs = [o.name for o in decoder.get_outputs()]
    step_ids, logits = prompt, []
    for token in tokens:
        result = dict(zip(outputs, decoder.run(None, {steps.INPUT_IDS: step_ids, **past, **cross})))
        logits.append(result[steps.LOGITS][0, -1].astype(np.float32))
        past = {k.replace("present", "past", 1): v for k, v in result.items() if k.startswith("present")}
        step_ids = np.array([[token]], dtype=np.int64)
    return logits
