"""Prints the median per-run onnxruntime latency (ms) of one model, alone in its process.

    python tests/bench/ort_latency.py MODEL.onnx FEEDS.npz

bench_export.py runs it in a fresh process per measurement: two sessions, or torch's
threads, in one process slow each other down through their spinning thread pools.
Imports only numpy and onnxruntime; default session options, CPU.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import onnxruntime


def median_latency_ms(model_path: str, feeds_path: str, rounds: int = 30, runs: int = 20) -> float:
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    with np.load(feeds_path) as npz:
        feeds = [npz[f"arr_{i}"] for i in range(len(npz.files))]
    inputs = dict(zip([i.name for i in session.get_inputs()], feeds))
    for _ in range(runs):
        session.run(None, inputs)
    per_run = []
    for _ in range(rounds):
        begin = time.perf_counter()
        for _ in range(runs):
            session.run(None, inputs)
        per_run.append((time.perf_counter() - begin) / runs * 1e3)
    return statistics.median(per_run)


if __name__ == "__main__":
    print(median_latency_ms(sys.argv[1], sys.argv[2]))
