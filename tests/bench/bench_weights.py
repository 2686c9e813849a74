"""Benchmark: what writing the weights costs, against the floor of torch.export + f.write.

    python tests/bench/bench_weights.py                       # vgg16 and a ~1B Llama
    python tests/bench/bench_weights.py --models linear24 --repeat 3   # issue 32's 400 MB model
    python tests/bench/bench_weights.py --models vgg16 --repeat 3
    python tests/bench/bench_weights.py --models llama1b --no-torch-onnx

For each model, every measurement runs in a fresh subprocess (so peak RSS is that call's
own), in turns so that machine drift hits every mode alike:

- ``floor``: ``torch.export.export`` + writing every weight's bytes with plain ``f.write``
  (what an exporter cannot go below);
- ``tonnx``: ``tonnx.to_onnx(model, args, filename=...)`` (inline below 2 GB, external data
  above);
- ``tonnx-mem``: ``tonnx.to_onnx(model, args)``, the ModelProto in memory (below 2 GB only);
- ``tonnx+load``: ``tonnx`` then ``onnx.load_external_data_for_model`` on the proto it
  returns (which references the file written): what a caller who wants the weights in the
  proto pays (below 2 GB only);
- ``torch.onnx``: ``torch.onnx.export(model, args, f, dynamo=True)``.

Extra peak RSS = the process's peak resident memory during the call (VmHWM, reset through
/proc/self/clear_refs just before) minus its resident memory just before, as a ratio of the
weights' size. Times are medians.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

#: hidden 2048, 16 layers, intermediate 5632, vocab 32000 (TinyLlama's shapes, 16 layers)
LLAMA_1B = dict(
    hidden_size=2048,
    num_hidden_layers=16,
    intermediate_size=5632,
    vocab_size=32000,
    num_attention_heads=32,
    num_key_value_heads=4,
    max_position_embeddings=2048,
)


def build(name: str, dtype: str = "float32"):
    import torch

    torch.manual_seed(0)
    if name == "linear24":  # issue 32: 24 Linear(2048, 2048), 403 MB of float32 weights
        layers = [torch.nn.Linear(2048, 2048) for _ in range(24)]
        return torch.nn.Sequential(*layers).eval(), (torch.rand(2, 2048),)
    if name == "vgg16":
        from tests.models.vision_nets import vgg16

        return vgg16(), (torch.rand(1, 3, 224, 224),)
    if name == "llama1b":
        import transformers

        config = transformers.LlamaConfig(**LLAMA_1B)
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
        return _logits(model.eval()), (torch.randint(0, 32000, (1, 8)),)
    raise ValueError(name)


def _logits(model):
    import torch

    class LogitsOnly(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids):
            return self.model(input_ids=input_ids, use_cache=False).logits

    return LogitsOnly(model).eval()


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def write_weights(model, path: str) -> int:
    """Every weight's bytes, from the tensor's memory, with plain f.write."""
    total = 0
    with open(path, "wb") as f:
        for t in model.state_dict().values():
            data = t.detach().contiguous()
            if data.dtype.is_floating_point and data.element_size() == 2:
                data = data.view(__import__("torch").int16)
            view = data.numpy().reshape(-1).view("uint8")
            f.write(view.data)
            total += view.nbytes
    return total


def worker(mode: str, name: str, folder: str) -> dict:
    import torch

    model, args = build(name)
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    path = os.path.join(folder, f"{name}-{mode}.onnx")
    # every mode warms up the same way outside the timed region: torch.export's first call
    # in a process pays one-time costs, and tonnx's import loads the packs
    import tonnx

    tonnx.to_onnx(torch.nn.Linear(2, 2), (torch.rand(1, 2),))
    if mode == "torch.onnx":
        with tempfile.TemporaryDirectory() as tmp:
            torch.onnx.export(torch.nn.Linear(2, 2), (torch.rand(1, 2),), os.path.join(tmp, "w.onnx"), dynamo=True)
    gc.collect()
    exact = _reset_peak()
    before = _status("VmRSS")
    begin = time.perf_counter()
    if mode == "floor":
        torch.export.export(model, args)
        write_weights(model, path + ".weights")
    elif mode == "tonnx":
        tonnx.to_onnx(model, args, filename=path)
    elif mode == "tonnx-mem":
        tonnx.to_onnx(model, args)
    elif mode == "tonnx+load":
        import onnx

        onx = tonnx.to_onnx(model, args, filename=path)
        onnx.load_external_data_for_model(onx, folder)
    elif mode == "torch.onnx":
        torch.onnx.export(model, args, path, dynamo=True, external_data=weights > 2**31 - 2**26)
    elapsed = time.perf_counter() - begin
    peak = _status("VmHWM")
    return dict(seconds=elapsed, extra_peak=peak - before, weights=weights, exact_peak=exact)


def run(mode: str, name: str, timeout: float) -> dict | None:
    with tempfile.TemporaryDirectory() as folder:
        cmd = [sys.executable, __file__, "--worker", mode, name, folder]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return dict(error=f"timeout {timeout:.0f}s")
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or ["?"])[-1]
            return dict(error=f"exit {out.returncode}: {last[:120]}")
        return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="vgg16,llama1b")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-torch-onnx", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--worker", nargs=3, metavar=("MODE", "MODEL", "FOLDER"))
    ns = parser.parse_args()
    if ns.worker:
        print(json.dumps(worker(*ns.worker)))
        return
    for name in ns.models.split(","):
        modes = ["floor", "tonnx"]
        if name in ("vgg16", "linear24"):
            modes += ["tonnx-mem", "tonnx+load"]
        if not ns.no_torch_onnx:
            modes.append("torch.onnx")
        results: dict[str, list[dict]] = {m: [] for m in modes}
        for _ in range(ns.repeat):
            for mode in modes:
                r = run(mode, name, ns.timeout)
                results[mode].append(r)
                print(f"  {name} {mode}: {r}", file=sys.stderr, flush=True)
        _print(name, results)


def _print(name: str, results: dict[str, list[dict]]) -> None:
    ok = {m: [r for r in rs if "error" not in r] for m, rs in results.items()}
    floor = statistics.median(r["seconds"] for r in ok["floor"]) if ok["floor"] else None
    weights = next((r["weights"] for rs in ok.values() for r in rs), 0)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{name}: weights {weights / 2**20:.0f} MiB (load average now {load})")
    print("| call | time (s), median | min-max | time / floor | extra peak RSS (MiB) | extra peak / weights |")
    print("|---|---|---|---|---|---|")
    for mode, rs in results.items():
        if not ok[mode]:
            print(f"| {mode} | {rs[0].get('error')} | | | | |")
            continue
        secs = [r["seconds"] for r in ok[mode]]
        sec = statistics.median(secs)
        peak = statistics.median(r["extra_peak"] for r in ok[mode])
        ratio = f"{sec / floor:.2f}x" if floor else "?"
        print(f"| {mode} | {sec:.2f} | {min(secs):.2f}-{max(secs):.2f} | {ratio} | "
              f"{peak / 2**20:.0f} | {peak / weights:.2f}x |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
