"""Prints the median per-run onnxruntime latency (ms) of models compared side by side.

    python tests/bench/ort_latency.py FEEDS.npz A.onnx B.onnx ...   # prints a JSON list

bench_export.py runs it in a fresh process that imports only numpy and onnxruntime
(torch's threads would compete with onnxruntime's). The sessions run in turns, order
flipping every turn: on a 2-core VM the latency of a sub-millisecond model drifts by up
to 2x from second to second and from process to process, and only runs interleaved this
finely see the same machine. Default session options, CPU.

A turn is one run of each session here. :func:`turn_medians_ms` can also run a block of
consecutive runs per session and turn (``block_s``), as a user's loop does: switching
sessions after every run makes each run reload weights and KV caches the other sessions
evicted from the caches, and wake its thread pool while the other session's threads
still spin, which triples a 4-layer Llama decode step (bench_decode.py).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time

import numpy as np
import onnxruntime


def turn_medians_ms(runs: list, budget_s: float, *, max_turns: int, block_s: float = 0.0) -> list[float]:
    """Median latency (ms) of each warmed-up ``(session, feeds)``, run in turns, the order
    flipping every turn, at least 31 turns, then until ``budget_s`` has passed. A turn runs
    each session ``max(1, block_s / its latency)`` times in a row (once when ``block_s`` is 0)."""
    blocks = [1] * len(runs)
    if block_s > 0:
        for i, (session, inputs) in enumerate(runs):
            begin = time.perf_counter()
            session.run(None, inputs)
            blocks[i] = max(1, math.ceil(block_s / max(time.perf_counter() - begin, 1e-6)))
    times: list[list[float]] = [[] for _ in runs]
    deadline = time.perf_counter() + budget_s
    for turn in range(max_turns):
        for i in range(len(runs)) if turn % 2 == 0 else reversed(range(len(runs))):
            session, inputs = runs[i]
            for _ in range(blocks[i]):
                begin = time.perf_counter()
                session.run(None, inputs)
                times[i].append(time.perf_counter() - begin)
        if turn >= 30 and time.perf_counter() > deadline:
            break
    return [statistics.median(t) * 1e3 for t in times]


def warm_sessions(model_paths: list[str], feeds: list | dict, threads: int = 0, *, spinning: bool = True) -> list[tuple]:
    """``(session, feeds)`` per model, created in order and run 10 times. ``feeds`` is a list
    (by input position) or a dict (by input name); ``threads`` 0 keeps onnxruntime's default;
    ``spinning=False`` makes idle pool threads sleep instead of spinning (a process's CPU time
    then counts the work, not the waiting)."""
    runs = []
    for path in model_paths:
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        inputs = {n: feeds[n] for n in names} if isinstance(feeds, dict) else dict(zip(names, feeds))
        for _ in range(10):
            session.run(None, inputs)
        runs.append((session, inputs))
    return runs


def median_latencies_ms(
    model_paths: list[str], feeds_path: str, budget_s: float = 4.0, max_turns: int = 3000
) -> list[float]:
    with np.load(feeds_path) as npz:
        feeds = [npz[f"arr_{i}"] for i in range(len(npz.files))]
    return turn_medians_ms(warm_sessions(model_paths, feeds), budget_s, max_turns=max_turns)


if __name__ == "__main__":
    print(json.dumps(median_latencies_ms(sys.argv[2:], sys.argv[1])))
