"""Kernel time by op type of one decode or prefill step of export-llm / builder folders.

    python tests/bench/profile_llm_step.py /tmp/llm-decode/tonnx-int4 /tmp/llm-decode/builder-int4
    python tests/bench/profile_llm_step.py --past 640 --runs 60 DIR...
    python tests/bench/profile_llm_step.py --tokens 64 --past 0 --runs 5 DIR...   # a prefill

Runs each folder's model.onnx in onnxruntime (CPU, ``--threads``, profiling on) on ``--tokens``
new tokens (1: a decode step) with a ``--past``-long cache of random values, non-shared
layout for both, and prints onnxruntime's median ``model_run`` time, the process CPU time
per run (what a loaded machine distorts least), the kernel time per run, and the op types
that take the most: their mean kernel time a run and the sum of each node's fastest run
(on a loaded machine a run's wall time includes the time other jobs held the core; a
node's fastest of ``--runs`` runs is the closest to its own cost). Also prints the node count after onnxruntime's graph optimizations.

    python tests/bench/profile_llm_step.py --interleave 7 --steps 10 DIR1 DIR2 ...

``--interleave R`` times instead (no profiling): all folders' sessions in this process, R
rounds of ``--steps`` runs each, in turns (DIR1, DIR2, ..., the order flipping every round),
process CPU time a run; prints each folder's median and its per-round ratio to the last
folder (a builder's, say), median and range.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
import time

import numpy as np


def step_feeds(session, folder: str, past: int, tokens: int) -> dict:
    """A step's inputs: ``tokens`` new ids after a ``past``-long cache of random values."""
    with open(os.path.join(folder, "genai_config.json")) as f:
        decoder = json.load(f)["model"]["decoder"]
    rng = np.random.default_rng(0)
    feeds = {}
    for i in session.get_inputs():
        integer = np.int64 if "int64" in i.type else np.int32
        if i.name == "input_ids":
            ids = (np.arange(tokens) * 7919 + 11) % 32000  # the benchmarks' vocabularies are larger
            feeds[i.name] = ids[None].astype(integer)
        elif i.name == "attention_mask":
            feeds[i.name] = np.ones((1, past + tokens), integer)
        elif i.name == "position_ids":
            feeds[i.name] = np.arange(past, past + tokens)[None].astype(integer)
        else:
            shape = (1, decoder["num_key_value_heads"], past, decoder["head_size"])
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def _session(folder: str, threads: int, options=None):
    import onnxruntime as ort

    options = options or ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(os.path.join(folder, "model.onnx"), options,
                                providers=["CPUExecutionProvider"])


def profile(folder: str, past: int, runs: int, tokens: int = 1, top: int = 12,
            threads: int = 1) -> None:
    import onnx
    import onnxruntime as ort

    tmp = tempfile.mkdtemp(prefix="profile-llm-step-")
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tmp, "profile")
    options.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
    session = _session(folder, threads, options)
    feeds = step_feeds(session, folder, past, tokens)
    session.run(None, feeds)  # warm-up: the first run allocates
    cpu = time.process_time()
    for _ in range(runs):
        session.run(None, feeds)
    cpu = (time.process_time() - cpu) / runs * 1e3
    with open(session.end_profiling()) as f:
        events = json.load(f)
    model_runs = [e for e in events if e.get("name") == "model_run"]
    warm_end = model_runs[0]["ts"] + model_runs[0]["dur"]  # the warm-up run is not counted
    by_node: dict = collections.defaultdict(list)  # (op type, node name) -> kernel times
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] > warm_end:
            by_node[(e["args"]["op_name"], e["name"])].append(e["dur"])
    by_op: collections.Counter = collections.Counter()
    least: collections.Counter = collections.Counter()  # each node's fastest run: what load adds least to
    count: collections.Counter = collections.Counter()
    for (op, _), durations in by_node.items():
        by_op[op] += sum(durations)
        least[op] += min(durations) * runs
        count[op] += len(durations)
    model_runs = sorted(e["dur"] for e in model_runs[1:])
    nodes = len(onnx.load(options.optimized_model_filepath, load_external_data=False).graph.node)
    median = model_runs[len(model_runs) // 2] / 1e3
    kernels = sum(by_op.values()) / runs / 1e3
    print(f"{folder}: {nodes} nodes after onnxruntime's optimizations, model_run median "
          f"{median:.2f} ms, CPU {cpu:.2f} ms/run, kernels {kernels:.2f} ms/run, the sum of each "
          f"kernel's fastest run {sum(least.values()) / runs / 1e3:.2f} ms ({tokens} tokens, past {past})")
    print(f"    {'op type':36s}{'mean ms':>9}{'fastest ms':>12}  nodes")
    for op, us in least.most_common(top):
        print(f"    {op:36s}{by_op[op] / runs / 1e3:9.3f}{us / runs / 1e3:12.3f}  x{count[op] // runs}")


def interleave(folders: list[str], past: int, tokens: int, rounds: int, steps: int,
               threads: int) -> None:
    """Process CPU ms a run of each folder's step, in turns; ratios to the last folder."""
    import statistics

    sessions = [_session(folder, threads) for folder in folders]
    feeds = [step_feeds(s, folder, past, tokens) for s, folder in zip(sessions, folders)]
    for session, feed in zip(sessions, feeds):
        session.run(None, feed)  # warm-up
    times: list[list[float]] = [[] for _ in folders]
    for r in range(rounds):
        order = range(len(folders)) if r % 2 == 0 else reversed(range(len(folders)))
        for i in order:
            start = time.process_time()
            for _ in range(steps):
                sessions[i].run(None, feeds[i])
            times[i].append((time.process_time() - start) / steps * 1e3)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {tokens} tokens, past {past}, "
          f"{threads} thread(s), {rounds} rounds of {steps} runs, process CPU ms a run")
    for folder, t in zip(folders, times):
        ratios = sorted(a / b for a, b in zip(t, times[-1]))
        print(f"    {folder}: median {statistics.median(t):.2f} ms (rounds {min(t):.2f}-{max(t):.2f}); "
              f"ratio to the last {statistics.median(ratios):.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--past", type=int, default=128)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--tokens", type=int, default=1, help="new tokens a run (1: decode)")
    parser.add_argument("--top", type=int, default=12, help="op types printed")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads (0: onnxruntime's default)")
    parser.add_argument("--interleave", type=int, metavar="R",
                        help="time R interleaved rounds instead of profiling")
    parser.add_argument("--steps", type=int, default=10, help="runs a round (--interleave)")
    args = parser.parse_args()
    if args.interleave:
        interleave(args.folders, args.past, args.tokens, args.interleave, args.steps, args.threads)
        return
    for folder in args.folders:
        profile(folder, args.past, args.runs, args.tokens, args.top, args.threads)


if __name__ == "__main__":
    main()
