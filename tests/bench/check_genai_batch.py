"""A left-padded batch through onnxruntime-genai, against transformers and onnxruntime.

    python tests/bench/check_genai_batch.py

The tests' tiny Llama is exported by ``tonnx export-llm`` and by onnxruntime-genai's builder.
Two prompts (6 and 4 tokens, the short one left-padded with the folder's pad id) generate 8
greedy tokens each:

- through onnxruntime-genai (``batch_size=2``, ``append_tokens`` of the padded batch), both
  folders;
- through tonnx's ``model.onnx`` in onnxruntime, a loop feeding what transformers' batched
  ``generate`` feeds (the padding masked, position ids from the mask's cumulative sum), and
  the same loop with the mask all ones at every step (the pad tokens attended to and counted
  as positions);
- transformers' ``generate`` of the padded batch with its mask.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "transformers_pack"))
PROMPTS, NEW = [[5, 17, 42, 7, 99, 13], [44, 9, 120, 8]], 8


def genai(folder: str) -> list[list[int]]:
    import onnxruntime_genai as og

    pad = json.load(open(os.path.join(folder, "genai_config.json")))["model"]["pad_token_id"]
    width = max(map(len, PROMPTS))
    model = og.Model(folder)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=width + NEW, do_sample=False, batch_size=len(PROMPTS))
    generator = og.Generator(model, params)
    generator.append_tokens(np.array([[pad] * (width - len(p)) + p for p in PROMPTS], np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    return [[int(t) for t in generator.get_sequence(i)[width:]] for i in range(len(PROMPTS))]


def onnxruntime_loop(model_file: str, ids: np.ndarray, mask: np.ndarray, pads_attended: bool) -> list[list[int]]:
    import onnxruntime as ort

    session = ort.InferenceSession(model_file, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    pasts = [i for i in session.get_inputs() if i.name.startswith("past_key_values")]
    feeds = {i.name: np.zeros((len(ids), i.shape[1], 0, i.shape[3]), np.float32) for i in pasts}
    step_ids, tokens = ids, []
    if pads_attended:
        mask = np.ones_like(mask)
    for _ in range(NEW):
        positions = np.cumsum(mask, -1) - 1
        positions[mask == 0] = 1  # transformers' masked_fill
        feeds.update(input_ids=step_ids, attention_mask=mask)
        if "position_ids" in names:
            feeds["position_ids"] = positions[:, -step_ids.shape[1]:]
        results = dict(zip(outputs, session.run(None, feeds)))
        step_ids = results["logits"][:, -1].argmax(-1)[:, None].astype(np.int64)
        tokens.append(step_ids[:, 0].tolist())
        feeds = {n.replace("present", "past_key_values"): v for n, v in results.items() if n.startswith("present")}
        mask = np.concatenate([mask, np.ones((len(ids), 1), np.int64)], 1)
    return np.array(tokens).T.tolist()


def main() -> None:
    import llm_folders
    import torch

    from tonnx_transformers import export_llm

    root = tempfile.mkdtemp(prefix="genai-batch-")
    source = os.path.join(root, "llama")
    model = llm_folders.save_folder("llama", source)
    export_llm(source, os.path.join(root, "tonnx"))
    subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", source, "-o",
                    os.path.join(root, "builder"), "-p", "fp32", "-e", "cpu", "-c", os.path.join(root, "cache")],
                   check=True, capture_output=True)
    pad = json.load(open(os.path.join(root, "tonnx", "genai_config.json")))["model"]["pad_token_id"]
    width = max(map(len, PROMPTS))
    ids = np.array([[pad] * (width - len(p)) + p for p in PROMPTS], np.int64)
    mask = np.array([[0] * (width - len(p)) + [1] * len(p) for p in PROMPTS], np.int64)
    with torch.no_grad():
        want = model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=NEW,
                              do_sample=False, pad_token_id=0)[:, width:].tolist()
    model_file = os.path.join(root, "tonnx", "model.onnx")
    rows = {
        "transformers generate (padding masked; 0 after eos)": want,
        "onnxruntime, tonnx's graph, padding masked": onnxruntime_loop(model_file, ids, mask, False),
        "onnxruntime, tonnx's graph, mask all ones": onnxruntime_loop(model_file, ids, mask, True),
        "onnxruntime-genai, tonnx's folder": genai(os.path.join(root, "tonnx")),
        "onnxruntime-genai, builder's folder": genai(os.path.join(root, "builder")),
    }
    for what, tokens in rows.items():
        print(f"{what:<50} {tokens}")


if __name__ == "__main__":
    main()
