"""Benchmark: a Llama-7B-shaped model, bigger than a comfortable share of memory, exported from
the ``meta`` device with its float16 weights streamed from safetensors files.

    python tests/bench/bench_7b.py --folder /tmp/llama7b          # generate, export, check, delete
    python tests/bench/bench_7b.py --folder /tmp/llama7b --keep   # keep the files
    python tests/bench/bench_7b.py --layers 2 --folder /tmp/l2    # a quick run of the same path

1. Generates random float16 weights (32 layers, hidden 4096, intermediate 11008, vocab 32000:
   6.7 B parameters, 13.5 GB) shard by shard, each shard built, saved and freed before the
   next, in its own subprocess.
2. Exports in a fresh subprocess: the model is built on ``meta`` (only the rotary embedding,
   a non-persistent buffer, on CPU), traced by torch.export without data, and
   ``tonnx.to_onnx(..., filename=..., weights="*.safetensors")`` reads each tensor, writes it
   to the external data file and frees it. Prints the time and the process's peak RSS.
3. Checks the file: the large initializers are external, the data file holds them all, and
   a sample of tensors (first, middle, last, largest) equals the safetensors bytes.
4. Deletes the generated files unless ``--keep``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

LLAMA_7B = dict(
    hidden_size=4096,
    num_hidden_layers=32,
    intermediate_size=11008,
    vocab_size=32000,
    num_attention_heads=32,
    num_key_value_heads=32,
    max_position_embeddings=4096,
)

SHARD_BYTES = 2 * 2**30


def meta_model(layers: int):
    """The wrapped causal LM on 'meta' in float16 (rotary embedding on CPU)."""
    import torch
    import transformers

    config = transformers.LlamaConfig(**dict(LLAMA_7B, num_hidden_layers=layers))
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float16)
    model.model.rotary_emb = type(model.model.rotary_emb)(config)

    class LogitsOnly(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids):
            return self.model(input_ids=input_ids, use_cache=False).logits

    return LogitsOnly(model.eval()).eval()


def generate(folder: str, layers: int, strip: str = "") -> dict:
    """Random float16 safetensors shards with the model's state_dict names (less ``strip``,
    the wrapper's prefix: ``"model."`` gives the causal LM's own names)."""
    import torch
    from safetensors.torch import save_file

    model = meta_model(layers)
    shard: dict = {}
    size = index = 0
    # a pool of random values (larger than any tensor); each tensor copies a window of it at
    # its own offset: distinct contents without paying randn for 6.7 B values
    gen = torch.Generator().manual_seed(0)
    largest = max(t.numel() for t in model.state_dict().values())
    pool = (torch.randn(largest + 2**20, generator=gen) * 0.02).to(torch.float16)

    def flush():
        nonlocal shard, size, index
        if shard:
            save_file(shard, os.path.join(folder, f"model-{index:05d}.safetensors"))
            index += 1
        shard, size = {}, 0

    total = 0
    for i, (name, meta) in enumerate(model.state_dict().items()):
        if meta.dim() == 1:  # norms
            t = torch.full(meta.shape, 1.0 + i / 1000, dtype=meta.dtype)
        else:
            start = (i * 7919) % (pool.numel() - meta.numel() + 1)
            t = pool[start : start + meta.numel()].clone().view(meta.shape)
        shard[name.removeprefix(strip)] = t
        size += t.numel() * t.element_size()
        total += t.numel() * t.element_size()
        if size >= SHARD_BYTES:
            flush()
    flush()
    return dict(bytes=total, shards=index)


def export(folder: str, layers: int) -> dict:
    import torch

    import tonnx

    begin = time.perf_counter()
    model = meta_model(layers)
    path = os.path.join(folder, "llama7b.onnx")
    tonnx.to_onnx(model, (torch.randint(0, 32000, (1, 8)),), filename=path,
                  weights=os.path.join(folder, "*.safetensors"), external_data=True)
    seconds = time.perf_counter() - begin
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return dict(seconds=seconds, peak_rss=peak)


def check(folder: str) -> dict:
    """Every initializer external and its bytes equal to the checkpoint's (sampled)."""
    import numpy as np
    import onnx
    from safetensors import safe_open

    path = os.path.join(folder, "llama7b.onnx")
    model = onnx.load(path, load_external_data=False)
    inits = list(model.graph.initializer)
    external = [t for t in inits if t.data_location == onnx.TensorProto.EXTERNAL]
    info = {t.name: {e.key: e.value for e in t.external_data} for t in external}
    (location,) = {v["location"] for v in info.values()}
    data_size = os.path.getsize(os.path.join(folder, location))
    end = max(int(v["offset"]) + int(v["length"]) for v in info.values())
    where = {}
    for shard in glob.glob(os.path.join(folder, "*.safetensors")):
        with safe_open(shard, framework="pt") as f:
            where.update({k: shard for k in f.keys()})  # noqa: SIM118
    largest = max(info, key=lambda n: int(info[n]["length"]))
    sample = [external[0].name, external[len(external) // 2].name, external[-1].name, largest]
    with open(os.path.join(folder, location), "rb") as data:
        for name in sample:
            with safe_open(where[name], framework="pt") as f:
                expected = f.get_tensor(name).view(-1).view(dtype=__import__("torch").int16).numpy()
            data.seek(int(info[name]["offset"]))
            got = np.frombuffer(data.read(int(info[name]["length"])), dtype=np.int16)
            assert np.array_equal(got, expected), name
    missing = sorted(set(where) - set(info))
    return dict(initializers=len(inits), external=len(external), data_bytes=data_size,
                data_end=end, sampled=sample, not_in_model=missing)


def _sub(step: str, folder: str, layers: int) -> dict:
    cmd = [sys.executable, __file__, "--step", step, "--folder", folder, "--layers", str(layers)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{step} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folder", required=True)
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--step", choices=["generate", "export", "check"])
    ns = parser.parse_args()
    if ns.step:
        fn = {"generate": generate, "export": export, "check": check}[ns.step]
        print(json.dumps(fn(ns.folder, ns.layers) if ns.step != "check" else fn(ns.folder)))
        return
    os.makedirs(ns.folder, exist_ok=True)
    try:
        begin = time.perf_counter()
        gen = _sub("generate", ns.folder, ns.layers)
        print(f"generated {gen['bytes'] / 1e9:.2f} GB of float16 weights in {gen['shards']} shards "
              f"({time.perf_counter() - begin:.0f} s)", flush=True)
        exp = _sub("export", ns.folder, ns.layers)
        print(f"export from meta + safetensors: {exp['seconds']:.1f} s, "
              f"peak RSS {exp['peak_rss'] / 2**30:.2f} GiB", flush=True)
        chk = _sub("check", ns.folder, ns.layers)
        print(f"check: {chk['external']}/{chk['initializers']} initializers external, data file "
              f"{chk['data_bytes'] / 1e9:.2f} GB (ends at {chk['data_end']}), sampled "
              f"{chk['sampled']} equal to the checkpoint; checkpoint tensors not in the model: "
              f"{chk['not_in_model']}", flush=True)
    finally:
        if not ns.keep:
            shutil.rmtree(ns.folder, ignore_errors=True)


if __name__ == "__main__":
    main()
