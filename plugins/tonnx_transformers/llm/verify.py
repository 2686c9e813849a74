"""The check made before a folder is published: greedy generation, onnxruntime vs transformers.

transformers' ``generate(do_sample=False)`` gives the tokens and the logits of each step;
onnxruntime runs the written ``model.onnx`` as onnxruntime-genai does (an empty cache first,
then one token per step, presents fed back as pasts) on the same tokens. Every step's logits
must agree within the tolerance and give the same token. A token that differs only because
two logits tie within the tolerance is not a failure of the export, so the check compares
logits first and names the step and the difference when they do not agree.

The tolerance of a step is ``atol + rtol * max |logit|`` of transformers' step, the same for
every logit. onnxruntime and torch add the same products in another order: their difference
comes from the rounding of the layers' sums (then of the hidden state the head multiplies),
so it scales with the magnitudes computed, not with each logit (a logit near 0 errs as much
as the largest). A tolerance per element (``|a - b| <= atol + rtol * |b|``) refused correct
folders of models with large logits (issue 31, item 15: 2.5e-4 on logits up to 23 with a
fixed atol 1e-4). Measured, fp32 and int8/int4 against the folder's weights: the difference
is at most 2e-5 of the step's largest logit (a 4-layer Llama, hidden 512, initializer_range
0.2); a wrong graph differs by a good part of the logits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tonnx import TonnxError

PROMPT, NEW_TOKENS = 7, 8


class GreedyCheckError(TonnxError):
    """The written model's logits or greedy tokens differ from transformers' (nothing published)."""


@dataclass
class GreedyCheck:
    tokens: list[int]
    max_abs_diff: float
    steps: int
    #: what the tokens were compared with
    against: str = "transformers' generate()"

    def line(self) -> str:
        return (f"greedy check: {self.steps} steps, tokens equal to {self.against}, "
                f"logits max abs diff {self.max_abs_diff:.3g}")


def check_greedy(path: str, reference: Any, vocab_size: int, *, atol: float = 1e-4,
                 rtol: float = 1e-4, against: str = "transformers' generate()") -> GreedyCheck:
    """Runs ``path`` in onnxruntime against ``reference`` (a transformers causal LM).

    Each step's logits must agree within ``atol + rtol * max |logit|`` (transformers'
    step), and onnxruntime's token must be transformers' or tie with it within that bound.
    """
    import onnxruntime as ort
    import torch

    prompt = torch.arange(PROMPT, dtype=torch.int64)[None] * 7919 % vocab_size
    with torch.no_grad():
        out = reference.generate(
            input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS, do_sample=False, output_logits=True,
            return_dict_in_generate=True, pad_token_id=0,
        )
    tokens = out.sequences[0, PROMPT:].tolist()
    want = [step[0].float().numpy() for step in out.logits]
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = _run_steps(session, prompt.numpy(), tokens)
    worst = compare_steps(want, got, tokens, atol=atol, rtol=rtol)
    return GreedyCheck(tokens, worst, len(tokens), against)


def compare_steps(want: list, got: list, tokens: list[int], *, atol: float, rtol: float,
                  what: str = "greedy generation") -> float:
    """The largest logit difference over the steps; a :class:`GreedyCheckError` naming the
    step when transformers' logits ``want`` and onnxruntime's ``got`` differ by more than
    ``atol + rtol * max |logit|``, or pick different tokens that do not tie within it."""
    import numpy as np

    worst = 0.0
    for step, (w, g) in enumerate(zip(want, got)):
        scale = float(np.abs(w).max())
        bound = atol + rtol * scale
        diff = float(np.abs(w - g).max())
        worst = max(worst, diff)
        if not diff <= bound:  # NaN fails too
            raise GreedyCheckError(
                f"Step {step} of {what}: onnxruntime's logits differ from transformers' by "
                f"{diff:.3g}, more than {bound:.3g} (atol {atol:g} + rtol {rtol:g} x the largest "
                f"|logit| {scale:.3g}); the folder is not written. Report it with the model's "
                f"config.json."
            )
        if int(g.argmax()) != tokens[step] and w[int(g.argmax())] < w[tokens[step]] - bound:
            raise GreedyCheckError(
                f"Step {step} of {what}: onnxruntime picks token {int(g.argmax())}, transformers "
                f"{tokens[step]}; the folder is not written."
            )
    return worst


def _run_steps(session: Any, prompt: Any, tokens: list[int]) -> list:
    """Last-position logits of each step, fed as onnxruntime-genai feeds the graph."""
    import numpy as np

    names = {i.name: i for i in session.get_inputs()}
    past = {}
    for name, info in names.items():
        if name.startswith("past"):
            _, heads, _, size = info.shape
            dtype = np.float16 if info.type == "tensor(float16)" else np.float32
            past[name] = np.zeros((1, heads, 0, size), dtype=dtype)
    outputs = [o.name for o in session.get_outputs()]
    step_ids, total, logits = prompt, 0, []
    for token in tokens:
        seq = step_ids.shape[1]
        feeds = {"input_ids": step_ids, "attention_mask": np.ones((1, total + seq), dtype=np.int64),
                 **past}
        if "position_ids" in names:
            feeds["position_ids"] = np.arange(total, total + seq, dtype=np.int64)[None]
        result = dict(zip(outputs, session.run(None, feeds)))
        logits.append(result["logits"][0, -1].astype(np.float32))
        # the presents come back as the pasts; other outputs (Moshi's last_hidden_state) are
        # not fed, as onnxruntime-genai does not feed them
        past = {k.replace("present", "past_key_values", 1): v for k, v in result.items() if k.startswith("present")}
        total += seq
        step_ids = np.array([[token]], dtype=np.int64)
    return logits
