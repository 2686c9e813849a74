"""onnxruntime latency of models exported with and without the ortcontrib pack, in one run.

    pip install ./contrib_packs/tonnx-ortcontrib
    python contrib_packs/tonnx-ortcontrib/bench/bench_ortcontrib.py            # all cases
    python contrib_packs/tonnx-ortcontrib/bench/bench_ortcontrib.py --cases llama4 --rounds 3

Cases: the Llama 4-layer benchmark config of tests/bench/bench_export.py (batch 2 x 32
tokens, no mask) and Llama, Mistral, BERT and GPT2 from the model list
(tests/models/transformer_models.py, batch 2 x 12 tokens, left padding in one row). Each
model is exported twice, with the installed packs (``ortcontrib`` on, priority 200) and with
``Dispatcher(packs=["no:ortcontrib"])`` (the aten pack's standard-domain graph). Both graphs
run side by side in fresh onnxruntime-only processes (tests/bench/ort_latency.py: runs
interleaved one by one, both session orders; default session options, CPU); a round gives
each graph's median latency, the table shows the median over rounds of each graph and of
the per-round ratio. Both results are checked against torch.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, ROOT)

CASES = ("llama4", "llama", "mistral", "bert", "gpt2")


def build(case: str):
    from tests.bench import bench_export
    from tests.models import transformer_models

    if case == "llama4":
        return bench_export.llama(4)
    return getattr(transformer_models, case)()


def export_both(model, args) -> dict:
    import tonnx

    return {
        "aten": tonnx.to_onnx(model, args, dispatcher=tonnx.Dispatcher(packs=["no:ortcontrib"])),
        "ortcontrib": tonnx.to_onnx(model, args),
    }


def fused_ops(onx) -> str:
    counts = collections.Counter(n.op_type for n in onx.graph.node if n.domain == "com.microsoft")
    counts.update(n.op_type for n in onx.graph.node if n.op_type == "SimplifiedLayerNormalization")
    return ", ".join(f"{op} x{c}" for op, c in sorted(counts.items()))


def bench_case(case: str, rounds: int) -> dict:
    from tests.bench.bench_export import max_diff, ort_latencies

    model, args = build(case)
    models = export_both(model, args)
    if not fused_ops(models["ortcontrib"]):
        raise SystemExit("the ortcontrib pack is not active: pip install ./contrib_packs/tonnx-ortcontrib")
    feeds = [a.numpy() for a in args]
    per_round = [ort_latencies(models, feeds) for _ in range(rounds)]
    return {
        "case": case,
        "nodes": {k: len(m.graph.node) for k, m in models.items()},
        "ms": {k: statistics.median(r[k] for r in per_round) for k in models},
        "ratio": statistics.median(r["ortcontrib"] / r["aten"] for r in per_round),
        "diff": {k: max_diff(m, model, args) for k, m in models.items()},
        "fused": fused_ops(models["ortcontrib"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=3, help="latency processes per case")
    opts = parser.parse_args()
    import onnxruntime

    torch.set_num_threads(1)  # the exports; latency is measured in other processes
    print(f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}, {os.cpu_count()} cores")
    print()
    print("| model | nodes aten / ortcontrib | ORT ms aten | ORT ms ortcontrib | ratio | max diff vs torch (aten / ortcontrib) | fused ops |")
    print("|---|---|---|---|---|---|---|")
    ratios = []
    for case in opts.cases.split(","):
        r = bench_case(case, opts.rounds)
        ratios.append(r["ratio"])
        print(
            f"| {case} | {r['nodes']['aten']} / {r['nodes']['ortcontrib']} | {r['ms']['aten']:.3f} | "
            f"{r['ms']['ortcontrib']:.3f} | {r['ratio']:.2f} | {r['diff']['aten']:.1e} / "
            f"{r['diff']['ortcontrib']:.1e} | {r['fused']} |",
            flush=True,
        )
    print(f"\ngeometric mean ratio: {float(np.exp(np.mean(np.log(ratios)))):.2f}")


if __name__ == "__main__":
    main()
