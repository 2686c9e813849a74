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
1024 here so a 512-token prompt fits) is exported by both exporters at each precision. All
folders run in this one process through onnxruntime_genai, interleaved (tonnx, builder,
tonnx, builder, ...) so background load hits both alike; the median over rounds is printed.
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


def save_llama(folder: str) -> None:
    bench_llm_precision.CONFIG = CONFIG
    bench_llm_precision.save_llama(folder)


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


def prompt_ids(n: int) -> np.ndarray:
    ids = (np.arange(n, dtype=np.int64) * 7919 + 11) % CONFIG["vocab_size"]
    return ids.astype(np.int32)[None]


def decode(og, model, prompt: int = PROMPT, new: int = NEW, clock=time.perf_counter) -> float:
    """Seconds per new token after the first, a ``prompt``-token prompt, ``new`` greedy tokens
    (``clock``: ``time.process_time`` counts the process's CPU time instead)."""
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=prompt + new, min_length=prompt + new, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt_ids(prompt))
    generator.generate_next_token()  # prefill
    start, steps = clock(), 0
    while not generator.is_done():
        generator.generate_next_token()
        steps += 1
    return (clock() - start) / steps


def prefill(og, model, long: int = LONG, clock=time.perf_counter) -> float:
    """Seconds of the first step after appending a ``long``-token prompt."""
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=long + 1, do_sample=False)
    generator = og.Generator(model, params)
    start = clock()
    generator.append_tokens(prompt_ids(long))
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
                        "instead of the random Llama")
    parser.add_argument("--share-off", action="store_true",
                        help="also run the builder's folder with past_present_share_buffer false")
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--also", nargs="+", default=[], metavar="DIR",
                        help="more exported folders to run in the same rounds (e.g. a 'before')")
    args = parser.parse_args()
    root = args.keep or tempfile.mkdtemp(prefix="bench-llm-decode-")
    source = args.source or os.path.join(root, "llama")
    if not os.path.isdir(source):
        save_llama(source)
    folders = {(who, p): export(source, root, who, p)
               for p in args.precisions for who in ("tonnx", "builder")}
    if args.share_off:
        for p in args.precisions:
            folders[("share-off", p)] = share_off(folders[("builder", p)])

    for folder in args.also:
        folders[(os.path.basename(os.path.normpath(folder)), "also")] = folder
    import onnxruntime_genai as og

    models = {key: og.Model(folder) for key, folder in folders.items()}
    whats = ("decode",) if args.skip_prefill else ("decode", "prefill")
    clock = time.process_time if args.cpu else time.perf_counter
    run = {"decode": lambda model: decode(og, model, args.prompt, args.new, clock),
           "prefill": lambda model: prefill(og, model, args.long, clock)}
    for model in models.values():  # warm-up: first runs allocate
        for what in whats:
            run[what](model)
    times: dict = {key: {what: [] for what in whats} for key in models}
    for _ in range(args.rounds):
        for key, model in models.items():  # interleaved: tonnx, builder, tonnx, builder...
            for what in whats:
                times[key][what].append(run[what](model))
    print(f"load average (uptime): {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"rounds {args.rounds}, median of {'CPU' if args.cpu else 'wall'} times; "
          f"decode: prompt {args.prompt}, {args.new} new tokens")
    prefill_head = f"{f'prefill {args.long} ms':>32}" if len(whats) > 1 else ""
    print(f"{'precision':<10}{'decode ms/token':>32}{prefill_head}")
    print(f"{'':<10}" + f"{'tonnx':>11}{'builder':>11}{'ratio':>10}" * len(whats))
    for p in args.precisions:
        row = f"{p:<10}"
        for what in whats:
            t, b = (statistics.median(times[(w, p)][what]) * 1e3 for w in ("tonnx", "builder"))
            row += f"{t:>11.2f}{b:>11.2f}{t / b:>10.2f}"
        print(row)
        if args.share_off:
            off = statistics.median(times[("share-off", p)]["decode"]) * 1e3
            print(f"{'':<10}builder, past_present_share_buffer false: decode {off:.2f} ms/token")
    for (who, p) in folders:
        if p != "also":
            continue
        builder = times[("builder", args.precisions[0])]
        row = f"{who}: " + ", ".join(
            f"{what} {statistics.median(times[(who, p)][what]) * 1e3:.2f} ms "
            f"({statistics.median(times[(who, p)][what]) / statistics.median(builder[what]):.2f}x the builder's)"
            for what in whats)
        print(row)
    print(json.dumps({f"{w}-{p}": {k: [round(x * 1e3, 3) for x in v] for k, v in d.items()}
                      for (w, p), d in times.items()}))


if __name__ == "__main__":
    main()
