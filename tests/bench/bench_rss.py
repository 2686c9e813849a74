"""RSS under load: does the process grow over many exports? (issue 8, section 4)

    python tests/bench/bench_rss.py [--runs 100]

Three loops, each in a fresh subprocess so they do not share memory: (1) ``to_onnx`` of a
small MLP, (2) ``to_onnx`` of the 2-layer Llama of the model list (torch.export included;
torch.export itself grows a little per call), (3) conversion only: one fixed
ExportedProgram of that Llama converted again and again, which is tonnx's own part.
Prints RSS after the 10th and the last run and the growth between them (target <= 5%).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def mlp():
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    return model, (torch.randn(8, 16),)


def llama2():
    sys.path.insert(0, HERE)
    from bench_export import llama

    return llama(2)


def loop(kind: str, runs: int) -> dict:
    import tonnx
    from tonnx.pipeline._arguments import DEFAULT_OPSET, opsets as _opsets
    from tonnx.pipeline._to_onnx import convert_program
    from tonnx.pipeline.capture._torch_export import export_program

    model, args = mlp() if kind == "mlp" else llama2()
    if kind == "convert":
        ep, names = export_program(model, args, {})
        step = lambda: convert_program(ep, names, opsets=_opsets(DEFAULT_OPSET))  # noqa: E731
    else:
        step = lambda: tonnx.to_onnx(model, args)  # noqa: E731
    samples = []
    for _ in range(runs):
        step()
        gc.collect()
        samples.append(rss_mb())
    return {"kind": kind, "after_10": samples[9], "last": samples[-1], "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(loop(args.child, args.runs)))
        return
    print(f"{'loop':<28}{'runs':>6}{'RSS@10 MB':>12}{'RSS@end MB':>12}{'growth':>9}")
    labels = {"mlp": "to_onnx(MLP)", "llama": "to_onnx(Llama 2 layers)", "convert": "convert(fixed EP, Llama 2L)"}
    for kind in ("mlp", "llama", "convert"):
        out = subprocess.run(
            [sys.executable, __file__, "--child", kind, "--runs", str(args.runs)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        growth = (r["last"] - r["after_10"]) / r["after_10"] * 100
        print(f"{labels[kind]:<28}{r['runs']:>6}{r['after_10']:>12.1f}{r['last']:>12.1f}{growth:>8.2f}%")


if __name__ == "__main__":
    main()
