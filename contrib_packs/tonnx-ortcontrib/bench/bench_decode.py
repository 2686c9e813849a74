"""Decode-step latency of a causal LM with its KV cache: aten pack, ortcontrib pack and the
graph onnxruntime-genai's model builder writes, same weights, side by side in one run.

    pip install ./contrib_packs/tonnx-ortcontrib onnxruntime-genai
    python contrib_packs/tonnx-ortcontrib/bench/bench_decode.py                 # both cases
    python contrib_packs/tonnx-ortcontrib/bench/bench_decode.py --cases 1x128 --rounds 3
    python contrib_packs/tonnx-ortcontrib/bench/bench_decode.py --model mixtral   # MoE, no builder

The model is tests/bench/bench_kv_cache.py's 4-layer Llama (hidden 256, 4 heads, 2 kv heads,
vocab 1000). tonnx exports it once per dispatcher, called with a ``DynamicCache`` (example:
batch 2, 3 new tokens, 8 cached; dynamic batch, sequence and cache lengths):
``Dispatcher(packs=["no:ortcontrib"])`` (the aten pack's standard-domain graph) and the
installed packs (ortcontrib: attention with the cache as ``GroupQueryAttention``). The
model, saved with ``save_pretrained`` beside a small word-level tokenizer (the builder
loads one), goes through ``python -m onnxruntime_genai.models.builder -i DIR -o OUT -p fp32
-e cpu``. ``--model mixtral``: the same with each MLP a mixture of 8 such experts, top-2
(ortcontrib: ``GroupQueryAttention`` and ``MoE``), aten and ortcontrib only. A case ``BxP`` is one new token for a batch of B after P cached tokens.

Each graph is checked against torch on the decode step (logits and presents), without
padding and, for B > 1, with left padding (row i has 2i padded positions: the builder's
graph reads the lengths from the mask's sums and assumes right padding, so it is expected
to differ there). Latency: the three graphs run in one fresh onnxruntime-only process,
in turns of 20 ms of consecutive runs each (bench_ortcontrib.BLOCK_S), the order flipping
every turn, for about 4 s (the session created
first measures a few percent slower, so each round runs two processes, creation orders
rotated, and averages the two medians). A round gives each graph's median; the table shows
the median over rounds, and the median over rounds of each per-round ratio. Default session
options, and ``intra_op_num_threads=1``. ``/proc/loadavg`` is printed before and after
each case: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ortcontrib import BLOCK_S  # noqa: E402  (the same turns)
from ort_latency import turn_medians_ms, warm_sessions  # noqa: E402

GRAPHS = ("aten", "ortcontrib", "genai")
CASES = ("1x128", "4x512")
DYNAMIC = {
    "input_ids": {0: "batch", 1: "seq"},
    "attention_mask": {0: "batch", 1: "total"},
    "position_ids": {0: "batch", 1: "seq"},
    "past_key_values": {0: "batch", 2: "past"},
}


def mixtral(layers: int):
    """bench_kv_cache.py's Llama with each MLP a mixture of 8 experts of the same size, top-2."""
    import transformers
    from bench_kv_cache import SIZES

    config = transformers.MixtralConfig(
        num_hidden_layers=layers, num_local_experts=8, num_experts_per_tok=2, **SIZES
    )
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# -- the three graphs ----------------------------------------------------------------------


def export_tonnx(model, folder: str) -> dict[str, str]:
    """The aten-only and the ortcontrib graph, saved in ``folder``; their paths."""
    from bench_kv_cache import inputs

    import tonnx

    example = inputs(model.config, 2, 3, 8)
    paths = {}
    for name, dispatcher in (("aten", tonnx.Dispatcher(packs=["no:ortcontrib"])), ("ortcontrib", None)):
        paths[name] = os.path.join(folder, f"{name}.onnx")
        kwargs = {} if dispatcher is None else {"dispatcher": dispatcher}
        onx = tonnx.to_onnx(model, kwargs=example, dynamic_shapes=DYNAMIC, **kwargs)
        with open(paths[name], "wb") as f:
            f.write(onx.SerializeToString())
    return paths


def _save_with_tokenizer(model, folder: str) -> None:
    """save_pretrained, and a word-level tokenizer over the vocabulary (the builder loads one)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    model.save_pretrained(folder)
    vocab = {f"t{i}": i for i in range(model.config.vocab_size)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="t0", bos_token="t1", eos_token="t2")
    fast.save_pretrained(folder)


def build_genai(model, folder: str) -> str:
    """The onnxruntime-genai model builder's fp32 CPU graph of the same weights; its path."""
    hf_dir, out = os.path.join(folder, "hf"), os.path.join(folder, "genai")
    _save_with_tokenizer(model, hf_dir)
    command = [
        sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf_dir, "-o", out,
        "-p", "fp32", "-e", "cpu", "-c", os.path.join(folder, "cache"),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"onnxruntime_genai's builder failed:\n{done.stderr[-3000:]}")
    return os.path.join(out, "model.onnx")


def fused_ops(path: str) -> str:
    import collections

    import onnx

    nodes = onnx.load(path, load_external_data=False).graph.node
    counts = collections.Counter(n.op_type for n in nodes if n.domain == "com.microsoft")
    return f"{len(nodes)} nodes" + "".join(f", {op} x{c}" for op, c in sorted(counts.items()))


# -- inputs and checks ---------------------------------------------------------------------


def step_inputs(config, batch: int, past: int, left_padding: bool) -> dict:
    """One new token after ``past`` cached ones; row i has 2i padded positions in front."""
    from bench_kv_cache import inputs

    step = inputs(config, batch, 1, past)
    if left_padding:
        mask = step["attention_mask"]
        for i in range(1, batch):
            mask[i, : 2 * i] = 0
        step["position_ids"] = (mask.cumsum(-1) - 1)[:, -1:]
    return step


def named_feeds(step: dict) -> dict[str, np.ndarray]:
    feeds = {k: step[k].numpy() for k in ("input_ids", "attention_mask", "position_ids")}
    for i, layer in enumerate(step["past_key_values"].layers):
        feeds[f"past_key_values.{i}.key"] = layer.keys.numpy()
        feeds[f"past_key_values.{i}.value"] = layer.values.numpy()
    return feeds


def expected(model, step: dict) -> dict[str, np.ndarray]:
    import copy

    with torch.no_grad():
        out = model(**copy.deepcopy(step), use_cache=True)
    result = {"logits": out.logits.numpy()}
    for i, layer in enumerate(out.past_key_values.layers):
        result[f"present.{i}.key"] = layer.keys.numpy()
        result[f"present.{i}.value"] = layer.values.numpy()
    return result


def max_diff(path: str, feeds: dict, want: dict) -> float:
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    got = dict(zip([o.name for o in session.get_outputs()], session.run(None, {n: feeds[n] for n in names})))
    return max(float(np.abs(got[k] - v).max()) for k, v in want.items())


# -- latency -------------------------------------------------------------------------------


def child(feeds_path: str, threads: int, paths: list[str], budget_s: float = 4.0) -> list[float]:
    """Median latency (ms) of each model: sessions created in the given order, run in turns
    of ``BLOCK_S`` of consecutive runs, the order flipping every turn."""
    with np.load(feeds_path) as npz:
        feeds = {k: npz[k] for k in npz.files}
    return turn_medians_ms(warm_sessions(paths, feeds, threads), budget_s, max_turns=100000, block_s=BLOCK_S)


def one_round(paths: dict, feeds_path: str, threads: int, round_index: int) -> dict[str, float]:
    """Two fresh processes, session creation orders rotated; each graph's mean of its two medians."""
    names = list(paths)
    measured: dict[str, list[float]] = {n: [] for n in names}
    for shift in (round_index, round_index + 1):
        k = shift % len(names)
        order = names[k:] + names[:k]
        command = [sys.executable, __file__, "--child", feeds_path, str(threads), *(paths[n] for n in order)]
        out = subprocess.run(command, capture_output=True, text=True, check=True)
        for name, ms in zip(order, json.loads(out.stdout.strip().splitlines()[-1])):
            measured[name].append(ms)
    return {n: statistics.mean(v) for n, v in measured.items()}


def summary(rounds: list[dict]) -> tuple[dict, dict]:
    ms = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    ratios = {
        f"ortcontrib/{other}": statistics.median(r["ortcontrib"] / r[other] for r in rounds)
        for other in ("aten", "genai")
        if other in rounds[0]
    }
    return ms, ratios


# -- main ----------------------------------------------------------------------------------


def bench_case(model, paths: dict, case: str, rounds: int, folder: str) -> None:
    batch, past = (int(x) for x in case.split("x"))
    step = step_inputs(model.config, batch, past, left_padding=False)
    feeds = named_feeds(step)
    want = expected(model, step)
    diffs = {n: max_diff(p, feeds, want) for n, p in paths.items()}
    padded = {}
    if batch > 1:
        left = step_inputs(model.config, batch, past, left_padding=True)
        padded = {n: max_diff(p, named_feeds(left), expected(model, left)) for n, p in paths.items()}
    feeds_path = os.path.join(folder, f"feeds_{case}.npz")
    np.savez(feeds_path, **feeds)
    print(f"\n### batch {batch}, past {past}, 1 new token (load average before: {load_average()})\n")
    names = [n for n in GRAPHS if n in paths]
    others = [n for n in names if n != "ortcontrib"]
    header = " | ".join([*(f"ORT ms {n}" for n in names), *(f"ortcontrib / {n}" for n in others)])
    print(f"| threads | {header} |")
    print("|---" * (1 + len(names) + len(others)) + "|")
    for threads, label in ((0, "default"), (1, "1")):
        per_round = [one_round(paths, feeds_path, threads, i) for i in range(rounds)]
        ms, ratios = summary(per_round)
        cells = [*(f"{ms[n]:.3f}" for n in names), *(f"{ratios['ortcontrib/' + n]:.2f}" for n in others)]
        print(f"| {label} | {' | '.join(cells)} |", flush=True)
    print(f"\nload average after: {load_average()}")
    print("max abs diff vs torch (logits, presents): " + ", ".join(f"{n} {d:.1e}" for n, d in diffs.items()))
    if padded:
        print("with left padding: " + ", ".join(f"{n} {d:.1e}" for n, d in padded.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="BATCHxPAST, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--model", choices=["llama", "mixtral"], default="llama",
                        help="mixtral: aten and ortcontrib only (the builder is not run)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(child(opts.child[0], int(opts.child[1]), opts.child[2:])))
        return
    import onnxruntime
    from bench_export import describe_machine
    from bench_kv_cache import llama

    torch.set_num_threads(1)  # the exports and checks; latency is measured in other processes
    print(describe_machine())
    print(f"load average: {load_average()}, onnxruntime {onnxruntime.__version__}")
    model = llama(opts.layers) if opts.model == "llama" else mixtral(opts.layers)
    with tempfile.TemporaryDirectory() as folder:
        paths = export_tonnx(model, folder)
        if opts.model == "llama":
            paths["genai"] = build_genai(model, folder)
        for name, path in paths.items():
            print(f"{name}: {fused_ops(path)}")
        for case in opts.cases.split(","):
            bench_case(model, paths, case, opts.rounds, folder)


if __name__ == "__main__":
    main()
