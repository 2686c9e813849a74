"""Where onnxruntime spends the time of two graphs of one model (tonnx's, torch.onnx's).

    python tests/bench/profile_runtime.py DIR NAME [--runs 50] [--threads 1] [--save-optimized]

Reads ``DIR/NAME.tonnx.onnx``, ``DIR/NAME.torch.onnx`` and ``DIR/NAME.feeds.npz`` (what
``bench_runtime.py --keep DIR`` leaves), runs each with onnxruntime's profiler and prints,
per op type of the graph onnxruntime runs after its own optimizations (fused nodes under
their fused name), the node count and the summed kernel time (ms) of one run, each node
counted by its fastest run (a loaded machine preempts the others), side by side.
``--save-optimized`` also writes ``NAME.<which>.opt.onnx``: the graph after onnxruntime's
fusions, to read what it fused from each.
"""

from __future__ import annotations

import argparse
import collections
import json
import os

import numpy as np
import onnxruntime


def profile(path: str, feeds: dict, runs: int, threads: int, optimized: str | None) -> tuple[dict, dict]:
    """(op type -> kernel ms per run, op type -> node count) of the optimized graph."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    if optimized:
        options.optimized_model_filepath = optimized
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    inputs = {i.name: feeds[i.name] for i in session.get_inputs()}
    for _ in range(5):
        session.run(None, inputs)
    for _ in range(runs):
        session.run(None, inputs)
    trace = session.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    os.remove(trace)
    durations: dict[str, list[int]] = collections.defaultdict(list)
    op_of = {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        durations[e["name"]].append(e["dur"])
        op_of[e["name"]] = e["args"].get("op_name", "?")
    # the fastest run of each node: on a loaded machine a kernel's wall time counts the
    # time other processes held the core, and the minimum is the run that was not preempted
    times, nodes = collections.Counter(), collections.Counter()
    for name, durs in durations.items():
        times[op_of[name]] += min(durs) / 1e3
        nodes[op_of[name]] += 1
    return dict(times), dict(nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("name")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--save-optimized", action="store_true")
    options = parser.parse_args()
    with np.load(os.path.join(options.folder, f"{options.name}.feeds.npz")) as npz:
        feeds = {n: npz[n] for n in npz.files}
    columns = {}
    for which in ("tonnx", "torch"):
        path = os.path.join(options.folder, f"{options.name}.{which}.onnx")
        opt = os.path.join(options.folder, f"{options.name}.{which}.opt.onnx") if options.save_optimized else None
        columns[which] = profile(path, feeds, options.runs, options.threads, opt)
    ops = sorted(set(columns["tonnx"][0]) | set(columns["torch"][0]),
                 key=lambda op: -max(columns["tonnx"][0].get(op, 0), columns["torch"][0].get(op, 0)))
    print(f"| op ({options.name}) | nodes tonnx | ms tonnx | nodes torch.onnx | ms torch.onnx |")
    print("|---|---|---|---|---|")
    for op in ops:
        cells = []
        for which in ("tonnx", "torch"):
            ms, n = columns[which]
            cells += [str(n.get(op, 0)), f"{ms.get(op, 0):.3f}"]
        print(f"| {op} | " + " | ".join(cells) + " |")
    totals = [sum(columns[w][0].values()) for w in ("tonnx", "torch")]
    counts = [sum(columns[w][1].values()) for w in ("tonnx", "torch")]
    print(f"| total | {counts[0]} | {totals[0]:.3f} | {counts[1]} | {totals[1]:.3f} |")


if __name__ == "__main__":
    main()
