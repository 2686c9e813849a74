"""Run time of tonnx's graphs against torch.onnx.export(dynamo=True)'s, in onnxruntime (CPU).

    python tests/bench/bench_runtime.py                       # the whole corpus, 1 and 2 threads
    python tests/bench/bench_runtime.py --quick               # a few small models, 1 thread, 1 round
    python tests/bench/bench_runtime.py --only sd3_tiny flux_tiny --rounds 5 --openvino

For each model of runtime_corpus.py (random weights, static batch 1) it exports the model
with ``tonnx.to_onnx`` and with ``torch.onnx.export(dynamo=True)`` (default optimize), checks
both against torch eager in onnxruntime (and in OpenVINO with ``--openvino``), then times them.
tonnx runs without the ortcontrib pack unless ``--packs`` says otherwise: both graphs hold
standard-domain ops only, and OpenVINO runs them.

Timing: each round is a fresh process that imports only numpy and onnxruntime and loads both
models (creation order flipping from round to round); the two sessions run in turns, order
flipping every turn, each turn running each session for about ``--block`` seconds in a row
(sub-millisecond models run many times per turn instead of switching session after every
run), for as many turns as fit in ``--budget`` seconds (at least 5). A round gives one median per model; the ratio
of a model is the median of its rounds' ratios, ``spread`` their min-max. On a 2-core VM
shared with other work a single sub-millisecond comparison moves by up to 0.4: read the
spread before reading a ratio.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", ".."))


# -- timing, in a process that imports only numpy and onnxruntime --------------------------------


def measure_child(feeds_path: str, threads: int, budget: float, block: float, clock: str, paths: list[str]) -> None:
    """Prints the median latency (ms) of each model, run in turns (see the module docstring)."""
    from ort_latency import warm_sessions

    with np.load(feeds_path) as npz:
        feeds = {name: npz[name] for name in npz.files}
    runs = warm_sessions(paths, feeds, threads, spinning=clock != "process")
    print(json.dumps(turn_medians_ms(runs, budget, block, CLOCKS[clock])))


#: wall time, the CPU time of the calling thread (``cpu``: with one intra-op thread
#: onnxruntime runs every kernel on it, and its CPU time does not count the time other
#: processes held the core; on a 2-core VM at load 10 wall medians move by 25% from round
#: to round, at load 13 a 2-thread run took 6x its CPU time), or the CPU time of the whole
#: process (``process``, several threads; their spinning turned off, so it counts work and
#: wake-ups, not waiting: the cost of a run on a shared machine, not its latency)
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time, "process": time.process_time}


def turn_medians_ms(runs: list, budget: float, block: float, clock) -> list[float]:
    """Median ms per run of each ``(session, feeds)``: turns, order flipping every turn,
    each session run ``block`` seconds in a row, as many turns as fit in ``budget`` (>= 5)."""
    repeats = []
    for session, inputs in runs:
        begin = time.perf_counter()
        session.run(None, inputs)
        repeats.append(max(1, math.ceil(block / max(time.perf_counter() - begin, 1e-6))))
    times: list[list[float]] = [[] for _ in runs]
    deadline, turn = time.perf_counter() + budget, 0
    while turn < 5 or time.perf_counter() < deadline:
        order = range(len(runs)) if turn % 2 == 0 else reversed(range(len(runs)))
        for i in order:
            session, inputs = runs[i]
            for _ in range(repeats[i]):
                begin = clock()
                session.run(None, inputs)
                times[i].append(clock() - begin)
        turn += 1
    return [statistics.median(t) * 1e3 for t in times]


def measure_rounds(paths: dict, feeds_path: str, threads: int, rounds: int, budget: float, block: float, clock: str = "wall") -> dict:
    """name -> list of per-round medians (ms); each round a fresh process, order flipped."""
    names = list(paths)
    measured = {n: [] for n in names}
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        out = subprocess.run(
            [sys.executable, __file__, "--measure", feeds_path, str(threads), str(budget), str(block), clock,
             *(paths[n] for n in order)],
            capture_output=True, text=True, check=True,
        )
        for n, ms in zip(order, json.loads(out.stdout.strip().splitlines()[-1])):
            measured[n].append(ms)
    return measured


# -- export and check ---------------------------------------------------------------------------


def export_both(
    model, args, folder: str, name: str, opset: int | None, packs: list[str], reuse: bool, tonnx_opset: int | None = None
) -> dict:
    """Writes ``name``.tonnx.onnx and ``name``.torch.onnx (kept when ``reuse`` and already
    there: torch.onnx's graph does not change between two runs); returns their paths.
    ``tonnx_opset`` is tonnx's alone (default: ``opset``)."""
    import onnx
    import torch

    import tonnx

    paths = {"tonnx": os.path.join(folder, f"{name}.tonnx.onnx"), "torch.onnx": os.path.join(folder, f"{name}.torch.onnx")}
    begin = time.perf_counter()
    kwargs = {"target_opset": tonnx_opset or opset} if tonnx_opset or opset else {}
    onnx.save(tonnx.to_onnx(model, args, dispatcher=tonnx.Dispatcher(packs=packs), **kwargs), paths["tonnx"])
    seconds = {"tonnx": time.perf_counter() - begin}
    if reuse and os.path.exists(paths["torch.onnx"]):
        return {"paths": paths, "seconds": seconds}
    begin = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kwargs = {"opset_version": opset} if opset else {}
            program = torch.onnx.export(model, args, dynamo=True, verbose=False, **kwargs)
    except Exception as e:  # the other exporter failing is a row of the table, not the end of it
        cause = e
        while cause.__cause__ is not None:
            cause = cause.__cause__
        return {"paths": paths, "seconds": seconds, "failed": f"{type(e).__name__} ({' '.join(str(cause).split())[:160]})"}
    onnx.save(program.model_proto, paths["torch.onnx"])
    seconds["torch.onnx"] = time.perf_counter() - begin
    return {"paths": paths, "seconds": seconds}


def expected_outputs(model, args) -> list[np.ndarray]:
    import torch

    with torch.no_grad():
        return [t.numpy() for t in torch.utils._pytree.tree_leaves(model(*args))]


def max_error(got: list, expected: list) -> float:
    return max(float(np.abs(g.astype(np.float64) - e.astype(np.float64)).max()) for g, e in zip(got, expected))


def ort_error(path: str, feeds: list, expected: list) -> float:
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return max_error(session.run(None, dict(zip(names, feeds))), expected)


def openvino_error(path: str, feeds: list, expected: list) -> float | str:
    """Max error in OpenVINO (CPU), or the reason OpenVINO refused the model."""
    import openvino

    try:
        compiled = openvino.Core().compile_model(path, "CPU")
    except RuntimeError as e:
        return "refused: " + " ".join(str(e).split())[-160:]
    results = compiled(feeds)
    return max_error([results[o] for o in compiled.outputs], expected)


def node_count(path: str) -> int:
    import onnx

    return len(onnx.load(path, load_external_data=False).graph.node)


# -- one model, the table -----------------------------------------------------------------------


def bench_one(name: str, build, folder: str, options) -> dict:
    import torch

    model, args = build()
    flat = [t.numpy() for t in torch.utils._pytree.tree_leaves(args)]
    expected = expected_outputs(model, args)
    exported = export_both(
        model, args, folder, name, options.opset, options.packs, options.reuse_torch_onnx, options.tonnx_opset
    )
    paths = exported["paths"]
    if "failed" in exported:
        row = {"model": name, "nodes tonnx": node_count(paths["tonnx"]), "nodes torch.onnx": "export failed"}
        row["err tonnx"] = ort_error(paths["tonnx"], flat, expected)
        if options.openvino:
            row["ov err tonnx"] = openvino_error(paths["tonnx"], flat, expected)
        row["error"] = "torch.onnx: " + exported["failed"]
        return row
    row = {"model": name, "nodes tonnx": node_count(paths["tonnx"]), "nodes torch.onnx": node_count(paths["torch.onnx"])}
    row["err tonnx"] = ort_error(paths["tonnx"], flat, expected)
    row["err torch.onnx"] = ort_error(paths["torch.onnx"], flat, expected)
    if options.openvino:
        row["ov err tonnx"] = openvino_error(paths["tonnx"], flat, expected)
        row["ov err torch.onnx"] = openvino_error(paths["torch.onnx"], flat, expected)
    feeds_path = os.path.join(folder, f"{name}.feeds.npz")
    import onnxruntime

    names = [i.name for i in onnxruntime.InferenceSession(paths["tonnx"], providers=["CPUExecutionProvider"]).get_inputs()]
    torch_names = [i.name for i in onnxruntime.InferenceSession(paths["torch.onnx"], providers=["CPUExecutionProvider"]).get_inputs()]
    np.savez(feeds_path, **{**dict(zip(names, flat)), **dict(zip(torch_names, flat))})
    for threads in options.threads:
        clock = ("cpu" if threads == 1 else "process") if options.cpu_time else "wall"
        ms = measure_rounds(paths, feeds_path, threads, options.rounds, options.budget, options.block, clock)
        ratios = [a / b for a, b in zip(ms["tonnx"], ms["torch.onnx"])]
        row[f"ms tonnx t{threads}"] = statistics.median(ms["tonnx"])
        row[f"ms torch.onnx t{threads}"] = statistics.median(ms["torch.onnx"])
        row[f"ratio t{threads}"] = statistics.median(ratios)
        row[f"spread t{threads}"] = f"{min(ratios):.2f}-{max(ratios):.2f}"
    return row


def print_table(rows: list[dict]) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for r in rows:
        cells = [f"{r[c]:.3g}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in columns]
        print("| " + " | ".join(cells) + " |")
    print(flush=True)


def summary(rows: list[dict], threads: list[int]) -> None:
    for t in threads:
        ratios = {r["model"]: r[f"ratio t{t}"] for r in rows if f"ratio t{t}" in r}
        if ratios:
            worst = max(ratios, key=ratios.get)
            print(f"threads {t}: median ratio {statistics.median(ratios.values()):.3f} over {len(ratios)} "
                  f"models, max {ratios[worst]:.3f} ({worst})", flush=True)


def describe_machine() -> str:
    import onnx
    import onnxruntime
    import torch

    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return (f"{os.cpu_count()} cores, load {load}, torch {torch.__version__}, onnx {onnx.__version__}, "
            f"onnxruntime {onnxruntime.__version__}")


def parse(argv=None):
    from runtime_corpus import CORPUS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(CORPUS), metavar="NAME", help="models to run")
    parser.add_argument("--quick", action="store_true", help="the QUICK subset, 1 thread, 1 round of 2 s")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per model and thread count")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of turns per round")
    parser.add_argument("--block", type=float, default=0.02, help="seconds a session runs per turn")
    parser.add_argument(
        "--cpu-time", action="store_true",
        help="time each run by CPU time instead of wall time (a loaded machine): the thread's at 1 "
        "thread, the process's at more (pool threads not spinning)",
    )
    parser.add_argument("--openvino", action="store_true", help="also check both models in OpenVINO")
    parser.add_argument(
        "--packs", nargs="*", default=["no:ortcontrib"],
        help="tonnx pack switches (default: no:ortcontrib, standard-domain graphs as torch.onnx's)",
    )
    parser.add_argument("--opset", type=int, default=None, help="opset of both exports (default: each one's)")
    parser.add_argument("--tonnx-opset", type=int, default=None, help="tonnx's opset alone (default: --opset)")
    parser.add_argument("--keep", default=None, help="folder to keep the exported models in")
    parser.add_argument("--reuse-torch-onnx", action="store_true", help="keep torch.onnx's models found in --keep")
    parser.add_argument("--json", default=None, help="write the rows to this file")
    return parser.parse_args(argv)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--measure":
        feeds, threads, budget, block, clock, *paths = sys.argv[2:]
        measure_child(feeds, int(threads), float(budget), float(block), clock, paths)
        return
    import torch
    from runtime_corpus import CORPUS, QUICK

    options = parse()
    if options.quick:
        options.threads, options.rounds, options.budget = [1], 1, 2.0
    names = options.only or (list(QUICK) if options.quick else list(CORPUS))
    torch.set_num_threads(1)
    print(describe_machine(), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = options.keep or tmp
        os.makedirs(folder, exist_ok=True)
        for name in names:
            try:
                rows.append(bench_one(name, CORPUS[name], folder, options))
            except Exception as e:  # one model failing must not hide the others' figures
                rows.append({"model": name, "error": f"{type(e).__name__}: {str(e)[:200]}"})
            print_table(rows[-1:])
    print_table(rows)
    summary(rows, options.threads)
    print(describe_machine(), flush=True)
    if options.json:
        with open(options.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
