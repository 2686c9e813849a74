"""Decode and prefill speed of ``tonnx export-llm`` against onnxruntime-genai's builder (#18 s3).

    python tests/bench/bench_llm_decode.py                        # fp32 and int4, 3 rounds
    python tests/bench/bench_llm_decode.py --rounds 5 --keep /tmp/llm-decode
    python tests/bench/bench_llm_decode.py --prompt 512 --skip-prefill   # a longer context
    python tests/bench/bench_llm_decode.py --prompt 512 --skip-prefill --share-off

``--also DIR...`` runs more folders in the same rounds (an earlier export, to measure a change
before/after beside both), each printed with its ratio to the builder's of the first precision.
``--share-off`` adds the builder's folder with ``past_present_share_buffer`` set to false (same
model.onnx): what the builder's graph gives with tonnx's cache layout.

The random Llama of ``bench_llm_precision.py`` (4 layers, hidden 512, vocab 32000; context
1024 here so a 512-token prompt fits) is exported by both exporters at each precision;
``--preset qwen3-0.6b`` (Qwen3-0.6B's shapes, 28 layers, tied embeddings) or ``llama-1b``
(16 layers, hidden 2048) builds another random model, ``--threads 1`` runs one thread. All
folders run in this one process through onnxruntime_genai, interleaved (tonnx, builder,
builder, tonnx, ...: the order flips every round) so background load hits both alike; each
folder's median and range over the rounds and the per-round tonnx/builder ratios are printed.
Decode: a 64-token prompt, 128 greedy new tokens, batch 1; the time per new token after the
first (the first ``generate_next_token`` runs the prefill). Prefill: the first
``generate_next_token`` after appending a 512-token prompt.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_llm_precision  # noqa: E402

CONFIG = {**bench_llm_precision.CONFIG, "max_position_embeddings": 1024}
PROMPT, NEW, LONG = 64, 128, 512
TOKENS = dict(bos_token_id=1, eos_token_id=2)
PRESETS = {  # --preset NAME: (transformers config class, its arguments); random weights
    "llama-4l": ("LlamaConfig", None),  # CONFIG, read when saved
    "qwen3-0.6b": ("Qwen3Config", dict(  # Qwen3-0.6B's shapes
        hidden_size=1024, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
        head_dim=128, intermediate_size=3072, vocab_size=151936, tie_word_embeddings=True,
        max_position_embeddings=1024, rms_norm_eps=1e-6, rope_theta=1000000.0, **TOKENS)),
    "llama-1b": ("LlamaConfig", dict(  # 1.1 B parameters
        hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
        intermediate_size=8192, vocab_size=32000, max_position_embeddings=1024, **TOKENS)),
}


def save_model(folder: str, preset: str = "llama-4l") -> None:
    """A random model of ``preset``'s shape saved with the tests' tokenizer in ``folder``."""
    import llm_folders
    import torch
    import transformers

    name, config = PRESETS[preset]
    config = CONFIG if config is None else config
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(getattr(transformers, name)(**config))
    model.save_pretrained(folder)
    llm_folders.tokenizer().save_pretrained(folder)


def export(source: str, root: str, who: str, precision: str) -> str:
    out = os.path.join(root, f"{who}-{precision}")
    if os.path.isdir(out):
        return out
    if who == "tonnx":
        command = ["tonnx", "export-llm", source, "-o", out, "--precision", precision, "-q"]
    else:
        command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", source,
                   "-o", out, "-p", precision, "-e", "cpu", "-c", os.path.join(root, "cache")]
    subprocess.run(command, check=True, capture_output=True)
    return out


def share_off(folder: str) -> str:
    """A copy of the builder's ``folder`` (weights linked) whose config does not share buffers."""
    out = folder + "-share-off"
    if not os.path.isdir(out):
        os.makedirs(out)
        for name in os.listdir(folder):
            if name != "genai_config.json":
                os.symlink(os.path.join(os.path.abspath(folder), name), os.path.join(out, name))
        with open(os.path.join(folder, "genai_config.json")) as f:
            config = json.load(f)
        config["search"]["past_present_share_buffer"] = False
        with open(os.path.join(out, "genai_config.json"), "w") as f:
            json.dump(config, f, indent=4)
    return out


def save_llama(folder: str) -> None:
    """The 4-layer Llama (``CONFIG``; bench_llm_export.py saves its source with this)."""
    save_model(folder, "llama-4l")


def prompt_ids(n: int, vocab: int | None = None) -> np.ndarray:
    """``n`` fixed ids below ``vocab`` (default: ``CONFIG``'s, which bench_moe_int4.py sets)."""
    ids = (np.arange(n, dtype=np.int64) * 7919 + 11) % (vocab or CONFIG["vocab_size"])
    return ids.astype(np.int32)[None]


def decode(og, model, prompt: int = PROMPT, new: int = NEW, clock=time.perf_counter,
           vocab: int | None = None) -> float:
    """Seconds per new token after the first, a ``prompt``-token prompt, ``new`` greedy tokens
    (``clock``: ``time.process_time`` counts the process's CPU time instead)."""
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=prompt + new, min_length=prompt + new, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt_ids(prompt, vocab))
    generator.generate_next_token()  # prefill
    start, steps = clock(), 0
    while not generator.is_done():
        generator.generate_next_token()
        steps += 1
    return (clock() - start) / steps


def prefill(og, model, long: int = LONG, clock=time.perf_counter, vocab: int | None = None) -> float:
    """Seconds of the first step after appending a ``long``-token prompt."""
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=long + 1, do_sample=False)
    generator = og.Generator(model, params)
    start = clock()
    generator.append_tokens(prompt_ids(long, vocab))
    generator.generate_next_token()
    return clock() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "int4"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt", type=int, default=PROMPT, help="decode's prompt length")
    parser.add_argument("--new", type=int, default=NEW, help="decode's new tokens")
    parser.add_argument("--long", type=int, default=LONG, help="prefill's prompt length")
    parser.add_argument("--skip-prefill", action="store_true", help="time decode only")
    parser.add_argument("--cpu", action="store_true",
                        help="the process's CPU time instead of wall time (a loaded machine)")
    parser.add_argument("--source", help="a save_pretrained folder with a tokenizer to export "
                        "instead of the random model")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="llama-4l",
                        help="the random model's shape (without --source)")
    parser.add_argument("--share-off", action="store_true",
                        help="also run the builder's folder with past_present_share_buffer false")
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--threads", type=int, default=0,
                        help="the decoder session's intra-op threads (0: onnxruntime's default)")
    parser.add_argument("--also", nargs="+", default=[], metavar="DIR",
                        help="more exported folders to run in the same rounds (e.g. a 'before')")
    args = parser.parse_args()
    root = args.keep or tempfile.mkdtemp(prefix="bench-llm-decode-")
    source = args.source or os.path.join(root, "llama" if args.preset == "llama-4l" else args.preset)
    if not os.path.isdir(source):
        save_model(source, args.preset)
    folders = {(who, p): export(source, root, who, p)
               for p in args.precisions for who in ("tonnx", "builder")}
    if args.share_off:
        for p in args.precisions:
            folders[("share-off", p)] = share_off(folders[("builder", p)])

    for folder in args.also:
        folders[(os.path.basename(os.path.normpath(folder)), "also")] = folder
    import onnxruntime_genai as og

    models = {key: load(og, folder, args.threads) for key, folder in folders.items()}
    whats = ("decode",) if args.skip_prefill else ("decode", "prefill")
    clock = time.process_time if args.cpu else time.perf_counter
    with open(os.path.join(folders[("builder", args.precisions[0])], "genai_config.json")) as f:
        vocab = min(32000, json.load(f)["model"]["vocab_size"])
    run = {"decode": lambda model: decode(og, model, args.prompt, args.new, clock, vocab),
           "prefill": lambda model: prefill(og, model, args.long, clock, vocab)}
    for model in models.values():  # warm-up: first runs allocate
        for what in whats:
            run[what](model)
    times: dict = {key: {what: [] for what in whats} for key in models}
    keys = list(models)
    for r in range(args.rounds):  # interleaved, the order flipping every round
        for key in keys if r % 2 == 0 else keys[::-1]:
            for what in whats:
                times[key][what].append(run[what](models[key]))
    report(args, whats, folders, times)


def load(og, folder: str, threads: int):
    """``folder``'s model; ``threads`` > 0 sets the decoder session's intra-op threads."""
    if not threads:
        return og.Model(folder)
    config = og.Config(folder)
    config.overlay(json.dumps({"model": {"decoder": {"session_options": {"intra_op_num_threads": threads}}}}))
    return og.Model(config)


def _spread(values: list[float], scale: float = 1e3) -> str:
    return f"{statistics.median(values) * scale:.2f} ({min(values) * scale:.2f}-{max(values) * scale:.2f})"


def _ratios(a: list[float], b: list[float]) -> str:
    """Median and range of the per-round ratios a/b (rounds run side by side)."""
    r = [x / y for x, y in zip(a, b)]
    return f"{statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f})"


def report(args, whats, folders, times) -> None:
    """Medians (round range) side by side, and the per-round ratios to the builder's."""
    print(f"load average (uptime): {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"rounds {args.rounds}, {'CPU' if args.cpu else 'wall'} times, median (min-max); "
          f"threads {args.threads or 'default'}; decode: prompt {args.prompt}, {args.new} new "
          f"tokens, ms/token; prefill: {args.long} tokens, ms")
    for p in args.precisions:
        builder = times[("builder", p)]
        for what in whats:
            t = times[("tonnx", p)][what]
            print(f"{p:<6}{what:<8} tonnx {_spread(t)}  builder {_spread(builder[what])}  "
                  f"tonnx/builder per round {_ratios(t, builder[what])}")
        if args.share_off:
            off = times[("share-off", p)]["decode"]
            print(f"{p:<6}decode   builder, past_present_share_buffer false: {_spread(off)}, "
                  f"per round / builder {_ratios(off, builder['decode'])}")
    for (who, p) in folders:
        if p != "also":
            continue
        builder = times[("builder", args.precisions[0])]
        for what in whats:
            print(f"{who}: {what} {_spread(times[(who, p)][what])}, per round / builder "
                  f"{_ratios(times[(who, p)][what], builder[what])}")
    print(json.dumps({f"{w}-{p}": {k: [round(x * 1e3, 3) for x in v] for k, v in d.items()}
                      for (w, p), d in times.items()}))

if __name__ == "__main__":
    main()
