"""Export time of the tiny Mixtral (2 layers, hidden 64, 4 experts, top-2) with tonnx, side
by side with torch.export of the same call, and onnxruntime's latency against torch eager.

    python tests/bench/bench_moe.py [--repeat 5] [--model mixtral]

``tonnx.to_onnx`` runs torch.export itself, then converts: its time includes torch.export's.
``convert only`` is ``tonnx.to_onnx`` given the ExportedProgram. The two exports alternate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import onnxruntime as ort
import torch

import tonnx

#: the graph this pack converts (ortcontrib, when installed, routes the expert blocks through
#: its MoE op, which torch.export alone would not trace)
STANDARD = tonnx.Dispatcher(packs=["no:ortcontrib"])

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "transformers_pack"))
from moe_models import CONFIGS, build, inputs  # noqa: E402


def _median_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(CONFIGS), default="mixtral")
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    model, args = build(opts.model), inputs(2, 16)
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    dynamic = ({0: batch, 1: seq}, {0: batch, 1: seq})

    # interleaved, so that load from other jobs falls on both sides alike
    export_times, tonnx_times = [], []
    for _ in range(opts.repeat):
        t, ep = _median_time(lambda: torch.export.export(model, args, dynamic_shapes=dynamic), 1)
        export_times.append(t)
        t, onx = _median_time(lambda: tonnx.to_onnx(model, args, dynamic_shapes=dynamic, dispatcher=STANDARD), 1)
        tonnx_times.append(t)
    t_export, t_tonnx = statistics.median(export_times), statistics.median(tonnx_times)
    t_convert, _ = _median_time(lambda: tonnx.to_onnx(ep, dispatcher=STANDARD), opts.repeat)
    print(f"{opts.model}: median of {opts.repeat}, batch 2 x seq 16, dynamic batch and sequence")
    print(f"  torch.export.export          {t_export * 1e3:8.1f} ms")
    print(f"  tonnx.to_onnx (with export)  {t_tonnx * 1e3:8.1f} ms   ratio {t_tonnx / t_export:.2f}x")
    print(f"  tonnx.to_onnx(ep) (convert)  {t_convert * 1e3:8.1f} ms")

    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
    with torch.no_grad():
        t_torch, _ = _median_time(lambda: model(*args), 50)
    t_ort, _ = _median_time(lambda: session.run(None, feeds), 50)
    print(f"  latency, median of 50: torch eager {t_torch * 1e3:.2f} ms, onnxruntime {t_ort * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
