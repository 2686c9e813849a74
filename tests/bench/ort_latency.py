"""Prints the median per-run onnxruntime latency (ms) of models compared side by side.

    python tests/bench/ort_latency.py FEEDS.npz A.onnx B.onnx ...   # prints a JSON list

bench_export.py runs it in a fresh process that imports only numpy and onnxruntime
(torch's threads would compete with onnxruntime's). The sessions run in turns, one run
each, order flipping every turn: on a 2-core VM the latency of a sub-millisecond model
drifts by up to 2x from second to second and from process to process, and only runs
interleaved this finely see the same machine. Default session options, CPU.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np
import onnxruntime


def median_latencies_ms(
    model_paths: list[str], feeds_path: str, budget_s: float = 4.0, max_turns: int = 3000
) -> list[float]:
    with np.load(feeds_path) as npz:
        feeds = [npz[f"arr_{i}"] for i in range(len(npz.files))]
    runs = []
    for path in model_paths:
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        inputs = dict(zip([i.name for i in session.get_inputs()], feeds))
        for _ in range(10):
            session.run(None, inputs)
        runs.append((session, inputs))
    times = [[] for _ in runs]
    deadline = time.perf_counter() + budget_s
    for turn in range(max_turns):
        order = range(len(runs)) if turn % 2 == 0 else reversed(range(len(runs)))
        for i in order:
            session, inputs = runs[i]
            begin = time.perf_counter()
            session.run(None, inputs)
            times[i].append(time.perf_counter() - begin)
        if turn >= 30 and time.perf_counter() > deadline:
            break
    return [statistics.median(t) * 1e3 for t in times]


if __name__ == "__main__":
    print(json.dumps(median_latencies_ms(sys.argv[2:], sys.argv[1])))
