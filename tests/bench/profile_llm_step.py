"""Kernel time by op type of one decode step of export-llm / builder folders (issue 18 s3).

    python tests/bench/profile_llm_step.py /tmp/llm-decode/tonnx-int4 /tmp/llm-decode/builder-int4
    python tests/bench/profile_llm_step.py --past 640 --runs 60 DIR...

Runs each folder's model.onnx in onnxruntime (CPU, one thread, profiling on) on one token
with a ``--past``-long cache of random values, non-shared layout for both, and prints
onnxruntime's median ``model_run`` time, the kernel time per run, and the op types that take
the most. Also prints the node count after onnxruntime's graph optimizations.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile

import numpy as np


def profile(folder: str, past: int, runs: int) -> None:
    import onnx
    import onnxruntime as ort

    with open(os.path.join(folder, "genai_config.json")) as f:
        decoder = json.load(f)["model"]["decoder"]
    tmp = tempfile.mkdtemp(prefix="profile-llm-step-")
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tmp, "profile")
    options.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(os.path.join(folder, "model.onnx"), options,
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in session.get_inputs():
        integer = np.int64 if "int64" in i.type else np.int32
        if i.name == "input_ids":
            feeds[i.name] = np.array([[5]], integer)
        elif i.name == "attention_mask":
            feeds[i.name] = np.ones((1, past + 1), integer)
        elif i.name == "position_ids":
            feeds[i.name] = np.array([[past]], integer)
        else:
            shape = (1, decoder["num_key_value_heads"], past, decoder["head_size"])
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    for _ in range(runs):
        session.run(None, feeds)
    with open(session.end_profiling()) as f:
        events = json.load(f)
    by_op: collections.Counter = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            by_op[e["args"]["op_name"]] += e["dur"]
    model_runs = sorted(e["dur"] for e in events if e.get("name") == "model_run")
    nodes = len(onnx.load(options.optimized_model_filepath, load_external_data=False).graph.node)
    median = model_runs[len(model_runs) // 2] / 1e3
    kernels = sum(by_op.values()) / runs / 1e3
    print(f"{folder}: {nodes} nodes after onnxruntime's optimizations, model_run median "
          f"{median:.2f} ms, kernels {kernels:.2f} ms/run")
    for op, us in by_op.most_common(12):
        print(f"    {op:36s}{us / runs / 1e3:8.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--past", type=int, default=128)
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    for folder in args.folders:
        profile(folder, args.past, args.runs)


if __name__ == "__main__":
    main()
