"""int4 / int8 folders of ``tonnx export-llm`` against onnxruntime-genai's builder (issue 18 s2).

    python tests/bench/bench_llm_precision.py                  # int4 and int8, 4 layers, hidden 512
    python tests/bench/bench_llm_precision.py --precisions int4 --keep /tmp/llm-precision

A random Llama (4 layers, hidden 512, 8 heads, 4 key/value heads, intermediate 1376, vocab
32000) is saved with the tests' byte-level tokenizer; each precision is exported by
``tonnx export-llm`` and by ``python -m onnxruntime_genai.models.builder -p P -e cpu``. For
each folder: the logits of a fixed 16-token prompt (empty cache, onnxruntime's CPU EP)
against transformers' float32 logits (max and mean absolute difference), and 32 greedy
tokens through onnxruntime_genai against transformers' ``generate(do_sample=False)`` (equal
positions, and the length of the equal prefix). Random weights give logits close to ties,
so greedy agreement is low for any quantized model; the logits error is the measure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "transformers_pack"))

CONFIG = dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
              vocab_size=32000, max_position_embeddings=512, intermediate_size=1376,
              bos_token_id=1, eos_token_id=2)
PROMPT, NEW = 16, 32


def save_llama(folder: str) -> None:
    import llm_folders
    import torch
    import transformers

    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(**CONFIG))
    model.save_pretrained(folder)
    llm_folders.tokenizer().save_pretrained(folder)


def logits(folder: str, prompt) -> np.ndarray:
    import onnxruntime as ort

    with open(os.path.join(folder, "genai_config.json")) as f:
        decoder = json.load(f)["model"]["decoder"]
    session = ort.InferenceSession(os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {}
    for i in session.get_inputs():
        if i.name == "input_ids":
            feeds[i.name] = prompt
        elif i.name == "attention_mask":
            feeds[i.name] = np.ones(prompt.shape, np.int64)
        elif i.name == "position_ids":
            feeds[i.name] = np.arange(prompt.shape[1], dtype=np.int64)[None]
        else:
            dtype = np.float16 if i.type == "tensor(float16)" else np.float32
            feeds[i.name] = np.zeros((1, decoder["num_key_value_heads"], 0, decoder["head_size"]), dtype)
    return session.run(["logits"], feeds)[0][0].astype(np.float32)


def genai_tokens(folder: str, prompt) -> list[int]:
    import onnxruntime_genai as og

    model = og.Model(folder)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=PROMPT + NEW, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt.astype(np.int32))
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    return tokens[:NEW]


def measure(folder: str, prompt, want: np.ndarray, want_tokens: list[int]) -> dict:
    diff = np.abs(logits(folder, prompt) - want)
    got = genai_tokens(folder, prompt)
    prefix = next((i for i, (a, b) in enumerate(zip(got, want_tokens)) if a != b), len(got))
    return {"max_abs": float(diff.max()), "mean_abs": float(diff.mean()),
            "greedy_equal": sum(a == b for a, b in zip(got, want_tokens)), "greedy_prefix": prefix}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precisions", nargs="+", default=["int4", "int8"])
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    root = args.keep or tempfile.mkdtemp(prefix="bench-llm-precision-")
    source = os.path.join(root, "llama")
    if not os.path.isdir(source):
        save_llama(source)

    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32).eval()
    prompt = (torch.arange(PROMPT, dtype=torch.int64)[None] * 7919 + 11) % CONFIG["vocab_size"]
    with torch.no_grad():
        want = model(input_ids=prompt).logits[0].numpy()
        want_tokens = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt),
                                     max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False,
                                     pad_token_id=0)[0, PROMPT:].tolist()
    print(f"max |logit| of transformers' float32 logits: {np.abs(want).max():.4g}")
    for precision in args.precisions:
        runs = {
            "tonnx": ["tonnx", "export-llm", source, "-o", os.path.join(root, f"tonnx-{precision}"),
                      "--precision", precision, "-q"],
            "builder": [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", source, "-o",
                        os.path.join(root, f"builder-{precision}"), "-p", precision, "-e", "cpu",
                        "-c", os.path.join(root, "cache")],
        }
        for who, command in runs.items():
            out = command[command.index("-o") + 1]
            if not os.path.isdir(out):
                subprocess.run(command, check=True, capture_output=True)
            result = measure(out, prompt.numpy(), want, want_tokens)
            print(json.dumps({"precision": precision, "exporter": who, **result}))


if __name__ == "__main__":
    main()
