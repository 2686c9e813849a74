"""Script (not CI): a ~1B-parameter Llama with random weights exports with external data,
loads and matches torch, in float32, float16 and bfloat16 weights.

    python tests/bench/check_llama1b.py                      # float32,float16,bfloat16
    python tests/bench/check_llama1b.py --dtypes float16 --runtime reference

Each dtype runs in a fresh subprocess. The model runs in onnxruntime when it can load it
(float32; float16 where its CPU kernels exist), else in onnx's reference evaluator; torch
runs the same weights in the same dtype. Prints the export time, the files' sizes, the
runtime used, the max abs difference of the logits and whether the argmax tokens agree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))


def one(dtype: str, runtime: str) -> dict:
    import numpy as np
    import onnx
    import torch
    from bench_weights import build

    import tonnx

    model, args = build("llama1b", dtype)
    with torch.no_grad():
        expected = model(*args).float().numpy()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "llama1b.onnx")
        begin = time.perf_counter()
        tonnx.to_onnx(model, args, filename=path, external_data=True)
        seconds = time.perf_counter() - begin
        sizes = {n: os.path.getsize(os.path.join(folder, n)) for n in sorted(os.listdir(folder))}
        del model
        feeds = {"input_ids": args[0].numpy()}
        used, got = None, None
        if runtime in ("auto", "onnxruntime"):
            import onnxruntime as ort

            try:
                sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                got, used = sess.run(None, dict(zip([i.name for i in sess.get_inputs()], feeds.values())))[0], "onnxruntime"
                del sess
            except Exception as e:  # noqa: BLE001 - falls back to the reference evaluator
                if runtime == "onnxruntime":
                    raise
                used = f"reference (onnxruntime: {str(e).splitlines()[0][:100]})"
        if got is None:
            from onnx.reference import ReferenceEvaluator

            ref = ReferenceEvaluator(onnx.load(path))
            got = ref.run(None, dict(zip(ref.input_names, feeds.values())))[0]
            used = used or "reference"
    got = np.asarray(got).astype(np.float32)
    return dict(
        dtype=dtype, export_seconds=seconds, sizes=sizes, runtime=used,
        max_abs_diff=float(np.abs(got - expected).max()), logits_scale=float(np.abs(expected).max()),
        argmax_agree=float((got.argmax(-1) == expected.argmax(-1)).mean()),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtypes", default="float32,float16,bfloat16")
    parser.add_argument("--runtime", default="auto", choices=["auto", "onnxruntime", "reference"])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.one:
        print(json.dumps(one(ns.one, ns.runtime)))
        return
    for dtype in ns.dtypes.split(","):
        out = subprocess.run([sys.executable, __file__, "--one", dtype, "--runtime", ns.runtime],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{dtype}: failed: {out.stderr.strip().splitlines()[-1][:300]}", flush=True)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        sizes = ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in r["sizes"].items())
        print(f"{dtype}: export {r['export_seconds']:.1f} s ({sizes}); {r['runtime']}: max abs diff "
              f"{r['max_abs_diff']:.3g} (logits up to {r['logits_scale']:.3g}), argmax agrees on "
              f"{r['argmax_agree']:.0%} of tokens", flush=True)


if __name__ == "__main__":
    main()
