"""Benchmark: tonnx against torch.onnx.export(dynamo=True), measured in one run.

    python tests/bench/bench_export.py                 # Llama 1..32 layers + model list
    python tests/bench/bench_export.py --layers 1,2 --no-models --repeat 3
    python tests/bench/bench_export.py --layers 1 --no-memory --models bert,t5

For each case it prints: torch.export.export alone, tonnx.to_onnx total, tonnx's conversion
(everything after torch.export), per-FX-node conversion time, torch.onnx.export(dynamo=True),
peak memory of each export (in fresh subprocesses), ONNX node counts, onnxruntime latency
of both models and the max abs diff of each against torch. Times are medians; the
exporters (and the two onnxruntime sessions) are timed in turns so that machine drift
hits both alike.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

LATENCY_SCRIPT = os.path.join(os.path.dirname(__file__), "ort_latency.py")

LLAMA = dict(
    hidden_size=256,
    intermediate_size=512,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=1000,
)


class LogitsOnly(torch.nn.Module):
    """Wraps a causal LM so that the exported program returns plain logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def llama(layers: int):
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(num_hidden_layers=layers, **LLAMA)
    model = LogitsOnly(transformers.LlamaForCausalLM(config).eval())
    return model, (torch.randint(0, 1000, (2, 32)),)


def model_list() -> dict:
    """The aten pack's model list (tests/models): name -> () -> (model, args)."""
    from tests.models import transformer_models, vision_nets

    def image(*shape):
        return torch.randn(*shape, generator=torch.Generator().manual_seed(0))

    def lstm():
        model = vision_nets.word_language_model("LSTM")
        return model, (torch.randint(0, model.ntoken, (5, 2)), model.init_hidden(2))

    cases = {
        "alexnet": lambda: (vision_nets.alexnet(), (image(1, 3, 224, 224),)),
        "vgg11_bn": lambda: (vision_nets.vgg11(True), (image(1, 3, 224, 224),)),
        "resnet18": lambda: (vision_nets.resnet18(), (image(2, 3, 64, 64),)),
        "densenet121": lambda: (vision_nets.densenet121(), (image(2, 3, 64, 64),)),
        "inception_v3": lambda: (vision_nets.inception_v3(), (image(2, 3, 75, 75),)),
        "dcgan": lambda: (vision_nets.dcgan_generator(), (image(2, 100, 1, 1),)),
        "super_resolution": lambda: (vision_nets.super_resolution(), (image(1, 1, 32, 32),)),
        "word_language_model": lstm,
    }
    cases.update(transformer_models.MODELS)
    return cases


def median_times(fns: dict, repeat: int) -> tuple[dict, dict]:
    """Median time of each function, called in turns so that drift hits them all alike."""
    times = {name: [] for name in fns}
    results = {}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            begin = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - begin)
    return {name: statistics.median(t) for name, t in times.items()}, results


def torch_onnx_export(model, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, args, dynamo=True, verbose=False)
    return program.model_proto


def ort_latencies(models: dict, feeds: list) -> dict:
    """Per-run onnxruntime latency (ms) of each model, measured side by side.

    The models run in turns in a fresh process that imports only onnxruntime (see
    ort_latency.py). The session created first measures a few percent slower, so the
    process runs twice, models created in one order then the other; each model's figure
    is the mean of its two medians.
    """
    with tempfile.TemporaryDirectory() as tmp:
        feeds_path = os.path.join(tmp, "feeds.npz")
        np.savez(feeds_path, *feeds)
        paths = {}
        for name, onx in models.items():
            paths[name] = os.path.join(tmp, f"{name}.onnx")
            with open(paths[name], "wb") as f:
                f.write(onx.SerializeToString())
        measured = {name: [] for name in models}
        for order in (list(models), list(reversed(models))):
            out = subprocess.run(
                [sys.executable, LATENCY_SCRIPT, feeds_path, *(paths[n] for n in order)],
                capture_output=True, text=True, check=True,
            )
            for name, ms in zip(order, json.loads(out.stdout.strip().splitlines()[-1])):
                measured[name].append(ms)
    return {name: statistics.mean(ms) for name, ms in measured.items()}


def max_diff(onx, model, args) -> float:
    from tonnx.testing import run_onnxruntime

    with torch.no_grad():
        expected = torch.utils._pytree.tree_leaves(model(*args))[0]
    got = run_onnxruntime(onx, flat_inputs(args))[0]
    return float(np.abs(got.astype(np.float64) - expected.numpy().astype(np.float64)).max())


def flat_inputs(args) -> list:
    return [t.numpy() for t in torch.utils._pytree.tree_leaves(args)]


def child_peak(kind: str, layers: int) -> None:
    """Runs one export in this (fresh) process and prints its peak memory increase."""
    import tonnx

    run = {
        "export": torch.export.export,
        "tonnx": tonnx.to_onnx,
        "torch.onnx": torch_onnx_export,
    }[kind]
    run(torch.nn.Linear(2, 2), (torch.rand(1, 2),))  # imports and caches out of the figure
    model, args = llama(layers)
    rss_before = _rss_mb()
    run(model, args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mb": peak - rss_before}))


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb(kind: str, layers: int) -> float:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--layers", str(layers)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"]


def weights_mb(model) -> float:
    return sum(p.numel() * p.element_size() for p in model.state_dict().values()) / 2**20


def bench_llama(layers: int, repeat: int, export_repeat: int, memory: bool) -> dict:
    import tonnx
    from tonnx.pipeline._arguments import DEFAULT_OPSET, opsets as _opsets
    from tonnx.pipeline._to_onnx import convert_program

    model, args = llama(layers)
    ep = torch.export.export(model, args)
    # torch.export's own time varies by up to 30% from call to call on this machine, more
    # than tonnx's whole conversion: the export-sized calls get more samples
    times, results = median_times(
        {
            "export": lambda: torch.export.export(model, args),
            "convert": lambda: convert_program(ep, {}, opsets=_opsets(DEFAULT_OPSET)),
            "total": lambda: tonnx.to_onnx(model, args),
        },
        export_repeat,
    )
    torch_onnx_times, torch_onnx_results = median_times(
        {"torch.onnx": lambda: torch_onnx_export(model, args)}, repeat
    )
    times.update(torch_onnx_times)
    results.update(torch_onnx_results)
    onx, ref = results["total"], results["torch.onnx"]
    fx_nodes = len(ep.graph.nodes)
    latency = ort_latencies({"tonnx": onx, "torch.onnx": ref}, flat_inputs(args))
    row = {
        "case": f"llama-{layers}L",
        "fx_nodes": fx_nodes,
        "torch.export s": times["export"],
        "tonnx total s": times["total"],
        "tonnx convert s": times["convert"],
        "us/FX node": times["convert"] / fx_nodes * 1e6,
        "torch.onnx s": times["torch.onnx"],
        "total/export": times["total"] / times["export"],
        "(export+convert)/export": (times["export"] + times["convert"]) / times["export"],
        "total/torch.onnx": times["total"] / times["torch.onnx"],
        "nodes tonnx": len(onx.graph.node),
        "nodes torch.onnx": len(ref.graph.node),
        "ort ms tonnx": latency["tonnx"],
        "ort ms torch.onnx": latency["torch.onnx"],
        "ort tonnx/torch.onnx": latency["tonnx"] / latency["torch.onnx"],
        "diff tonnx": max_diff(onx, model, args),
        "diff torch.onnx": max_diff(ref, model, args),
        "weights MB": weights_mb(model),
    }
    if memory:
        row["peak MB export"] = peak_mb("export", layers)
        row["peak MB tonnx"] = peak_mb("tonnx", layers)
        row["peak MB torch.onnx"] = peak_mb("torch.onnx", layers)
        row["tonnx/(w+export)"] = row["peak MB tonnx"] / (row["weights MB"] + row["peak MB export"])
    return row


def bench_model(name: str, factory, repeat: int) -> dict:
    import tonnx

    model, args = factory()
    times, results = median_times(
        {"tonnx": lambda: tonnx.to_onnx(model, args), "torch.onnx": lambda: torch_onnx_export(model, args)},
        repeat,
    )
    onx, ref = results["tonnx"], results["torch.onnx"]
    latency = ort_latencies({"tonnx": onx, "torch.onnx": ref}, flat_inputs(args))
    return {
        "case": name,
        "tonnx total s": times["tonnx"],
        "torch.onnx s": times["torch.onnx"],
        "nodes tonnx": len(onx.graph.node),
        "nodes torch.onnx": len(ref.graph.node),
        "ort ms tonnx": latency["tonnx"],
        "ort ms torch.onnx": latency["torch.onnx"],
        "ort tonnx/torch.onnx": latency["tonnx"] / latency["torch.onnx"],
        "diff tonnx": max_diff(onx, model, args),
        "diff torch.onnx": max_diff(ref, model, args),
    }


def print_table(rows: list[dict]) -> None:
    if not rows:
        return
    columns = list(dict.fromkeys(k for r in rows for k in r))
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            cells.append(f"{v:.3g}" if isinstance(v, float) else str(v))
        print("| " + " | ".join(cells) + " |")
    print(flush=True)


def describe_machine() -> str:
    import onnx
    import onnxruntime

    return (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, torch {torch.__version__}, onnx {onnx.__version__}, "
        f"onnxruntime {onnxruntime.__version__}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", default="1,2,4,8,16,32")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--export-repeat", type=int, default=11, help="samples of torch.export and tonnx on Llama")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--no-models", action="store_true")
    parser.add_argument("--models", default=None, help="comma-separated subset of the model list")
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    if args.child:
        child_peak(args.child, int(args.layers))
        return
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    print(describe_machine(), flush=True)
    torch.export.export(torch.nn.Linear(2, 2), (torch.rand(1, 2),))  # warm torch.export up
    rows = []
    for layers in [int(x) for x in args.layers.split(",")]:
        rows.append(bench_llama(layers, args.repeat, args.export_repeat, not args.no_memory))
        print_table(rows[-1:])
    print("## Llama (hidden 256, intermediate 512, 4 heads, 2 kv heads, vocab 1000, batch 2 x 32)")
    print_table(rows)
    if not args.no_models:
        model_rows = []
        chosen = args.models.split(",") if args.models else None
        for name, factory in model_list().items():
            if chosen and name not in chosen:
                continue
            try:
                model_rows.append(bench_model(name, factory, args.repeat))
            except Exception as e:  # one exporter failing on one model must not hide the rest
                model_rows.append({"case": name, "error": f"{type(e).__name__}: {str(e)[:80]}"})
            print_table(model_rows[-1:])
        print("## Model list")
        print_table(model_rows)

if __name__ == "__main__":
    main()
