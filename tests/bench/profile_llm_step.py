"""Kernel time by op type of one decode or prefill step of export-llm / builder folders.

    python tests/bench/profile_llm_step.py /tmp/llm-decode/tonnx-int4 /tmp/llm-decode/builder-int4
    python tests/bench/profile_llm_step.py --past 640 --runs 60 DIR...
    python tests/bench/profile_llm_step.py --tokens 64 --past 0 --runs 5 DIR...   # a prefill

Runs each folder's model.onnx in onnxruntime (CPU, ``--threads``, profiling on) on ``--tokens``
new tokens (1: a decode step) with a ``--past``-long cache of random values, non-shared
layout for both, and prints onnxruntime's median ``model_run`` time, the process CPU time
per run (what a loaded machine distorts least), the kernel time per run, and the op types
that take the most. Also prints the node count after onnxruntime's graph optimizations.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
import time

import numpy as np


def profile(folder: str, past: int, runs: int, tokens: int = 1, top: int = 12,
            threads: int = 1) -> None:
    import onnx
    import onnxruntime as ort

    with open(os.path.join(folder, "genai_config.json")) as f:
        decoder = json.load(f)["model"]["decoder"]
    tmp = tempfile.mkdtemp(prefix="profile-llm-step-")
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tmp, "profile")
    options.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(os.path.join(folder, "model.onnx"), options,
                                   providers=["CPUExecutionProvider"])
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
    session.run(None, feeds)  # warm-up: the first run allocates
    cpu = time.process_time()
    for _ in range(runs):
        session.run(None, feeds)
    cpu = (time.process_time() - cpu) / runs * 1e3
    with open(session.end_profiling()) as f:
        events = json.load(f)
    model_runs = [e for e in events if e.get("name") == "model_run"]
    warm_end = model_runs[0]["ts"] + model_runs[0]["dur"]  # the warm-up run is not counted
    by_op: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] > warm_end:
            by_op[e["args"]["op_name"]] += e["dur"]
            count[e["args"]["op_name"]] += 1
    model_runs = sorted(e["dur"] for e in model_runs[1:])
    nodes = len(onnx.load(options.optimized_model_filepath, load_external_data=False).graph.node)
    median = model_runs[len(model_runs) // 2] / 1e3
    kernels = sum(by_op.values()) / runs / 1e3
    print(f"{folder}: {nodes} nodes after onnxruntime's optimizations, model_run median "
          f"{median:.2f} ms, CPU {cpu:.2f} ms/run, kernels {kernels:.2f} ms/run "
          f"({tokens} tokens, past {past})")
    for op, us in by_op.most_common(top):
        print(f"    {op:36s}{us / runs / 1e3:9.3f} ms  x{count[op] // runs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--past", type=int, default=128)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--tokens", type=int, default=1, help="new tokens a run (1: decode)")
    parser.add_argument("--top", type=int, default=12, help="op types printed")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads (0: onnxruntime's default)")
    args = parser.parse_args()
    for folder in args.folders:
        profile(folder, args.past, args.runs, args.tokens, args.top, args.threads)


if __name__ == "__main__":
    main()
