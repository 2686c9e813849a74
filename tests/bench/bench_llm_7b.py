"""``tonnx export-llm`` of a Llama-7B-shaped folder, a model larger than memory in float32.

    python tests/bench/bench_llm_7b.py --folder /tmp/llama7b                 # int4; generate, export, run, delete
    python tests/bench/bench_llm_7b.py --folder /tmp/llama7b --precisions int4 fp16 --keep
    python tests/bench/bench_llm_7b.py --folder /tmp/l2 --layers 2           # a quick run of the same path

1. Writes a transformers folder: ``config.json`` (float16), random float16 safetensors shards
   with the causal LM's names (``bench_7b.generate``: one shard in memory at a time; 32
   layers, hidden 4096: 6.7 B parameters, 13.5 GB, 27 GB in float32, more than this 24 GB
   machine) and a byte-level tokenizer.
2. Runs ``tonnx export-llm FOLDER -o OUT --precision P --no-verify`` (the greedy check
   would load the float32 model) under ``/usr/bin/time -v``: wall time and peak RSS.
3. Opens OUT with ``onnxruntime_genai.Model`` and generates greedily from a 16-token prompt:
   tokens, time per new token and the process's peak RSS (in a subprocess of its own).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "transformers_pack"))


def write_folder(folder: str, layers: int) -> dict:
    import bench_7b
    import llm_folders
    import transformers

    os.makedirs(folder, exist_ok=True)
    made = bench_7b.generate(folder, layers, strip="model.")
    config = transformers.LlamaConfig(**dict(bench_7b.LLAMA_7B, num_hidden_layers=layers, bos_token_id=1,
                                             eos_token_id=2, dtype="float16",
                                             architectures=["LlamaForCausalLM"]))
    config.save_pretrained(folder)
    write_index(folder)
    llm_folders.tokenizer().save_pretrained(folder)
    return made


def write_index(folder: str) -> None:
    """``model.safetensors.index.json``: transformers' ``from_pretrained`` (the builder's
    loader) needs it to read a sharded checkpoint; export-llm reads the shards themselves."""
    import glob

    from safetensors import safe_open

    weight_map, total = {}, 0
    for shard in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        with safe_open(shard, framework="pt") as f:
            for name in f.keys():  # noqa: SIM118
                weight_map[name] = os.path.basename(shard)
                total += math.prod(f.get_slice(name).get_shape()) * 2  # every tensor is float16
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def timed(argv: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS in bytes) of ``argv`` run under ``/usr/bin/time -v``."""
    begin = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True)
    seconds = time.perf_counter() - begin
    if out.returncode != 0:
        raise SystemExit(f"{argv} failed:\n{out.stderr[-3000:]}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)) * 1024
    return seconds, peak


def generate_tokens(folder: str, new: int) -> dict:
    """Greedy tokens of the folder in onnxruntime-genai (run in its own process)."""
    import resource

    import numpy as np
    import onnxruntime_genai as og

    begin = time.perf_counter()
    model = og.Model(folder)
    loaded = time.perf_counter() - begin
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=16 + new, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(np.array([[5, 17, 42, 7, 99, 13, 250, 31, 8, 64, 120, 77, 3000, 9, 11, 400]], np.int32))
    generator.generate_next_token()
    start = time.perf_counter()
    while not generator.is_done():
        generator.generate_next_token()
    per_token = (time.perf_counter() - start) / max(1, len(generator.get_sequence(0)) - 17)
    return dict(load_s=loaded, ms_per_token=per_token * 1e3, tokens=[int(t) for t in generator.get_sequence(0)[16:]],
                peak_rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", required=True, help="the transformers folder (written when missing)")
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--precisions", nargs="+", default=["int4"])
    parser.add_argument("--new", type=int, default=16, help="tokens generated in onnxruntime-genai")
    parser.add_argument("--keep", action="store_true", help="keep the generated and exported folders")
    parser.add_argument("--generate-only", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_only:
        print(json.dumps(generate_tokens(args.generate_only, args.new)))
        return
    made_here = not os.path.isdir(args.folder)
    outs = []
    try:
        if made_here:
            begin = time.perf_counter()
            made = write_folder(args.folder, args.layers)
            print(f"wrote {made['bytes'] / 1e9:.2f} GB of float16 weights in {made['shards']} shards "
                  f"({time.perf_counter() - begin:.0f} s)", flush=True)
        for precision in args.precisions:
            out = f"{args.folder.rstrip('/')}-{precision}"
            outs.append(out)
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run(["sync"], check=True)
            seconds, peak = timed(["tonnx", "export-llm", args.folder, "-o", out, "--precision", precision,
                                   "--no-verify", "-q"])
            size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
            print(f"{precision}: export-llm {seconds:.1f} s, peak RSS {peak / 2**30:.2f} GiB, folder "
                  f"{size / 1e9:.2f} GB", flush=True)
            ran = subprocess.run([sys.executable, __file__, "--folder", args.folder, "--new", str(args.new),
                                  "--generate-only", out], capture_output=True, text=True)
            if ran.returncode != 0:
                print(f"{precision}: onnxruntime-genai failed:\n{ran.stderr[-2000:]}", flush=True)
                continue
            got = json.loads(ran.stdout.strip().splitlines()[-1])
            print(f"{precision}: onnxruntime-genai load {got['load_s']:.1f} s, {got['ms_per_token']:.0f} ms/token, "
                  f"peak RSS {got['peak_rss'] / 2**30:.2f} GiB, tokens {got['tokens']}", flush=True)
    finally:
        if not args.keep:
            for path in [*outs, *([args.folder] if made_here else [])]:
                shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
