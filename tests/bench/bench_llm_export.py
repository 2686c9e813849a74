"""Export time of ``tonnx export-llm`` against onnxruntime-genai's builder (issue 18 s3).

    python tests/bench/bench_llm_export.py --keep /tmp/llm-decode --rounds 2
    python tests/bench/bench_llm_export.py --source /tmp/llama1b --rounds 1   # a folder of yours
    python tests/bench/bench_llm_export.py --shape qwen3-0.6b --keep /tmp/q06 --precisions fp32
    python tests/bench/bench_llm_export.py --shape llama-1b --keep /tmp/l1b --precisions fp32

The random Llama of ``bench_llm_decode.py`` (4 layers, hidden 512, vocab 32000), or with
``--shape`` a random model of a released model's shapes (:data:`SHAPES`; saved once under
``--keep`` with ``save_pretrained`` and the tests' tokenizer, as the builder needs one), is exported
by both tools at each precision, interleaved (tonnx, builder, tonnx, builder, ...), each as
its own process under ``/usr/bin/time``: wall time, CPU time and peak RSS of the whole command (imports,
tracing or graph writing, weights, and tonnx's greedy check). Medians are printed. Each run
starts after a ``sync``: on a slow disk a run otherwise pays for the previous one's writeback.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_llm_decode  # noqa: E402

#: --shape: random models of released models' shapes (config class, its arguments)
SHAPES = {
    # Qwen3-0.6B: 28 layers, q/k norms, tied 151936-row embeddings
    "qwen3-0.6b": ("Qwen3Config", dict(
        hidden_size=1024, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
        head_dim=128, intermediate_size=3072, vocab_size=151936, tie_word_embeddings=True,
        max_position_embeddings=2048, bos_token_id=1, eos_token_id=2)),
    # the 1 B Llama of docs/benchmarks.md (1.1 B parameters)
    "llama-1b": ("LlamaConfig", dict(
        hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
        intermediate_size=8192, vocab_size=32000, max_position_embeddings=2048,
        bos_token_id=1, eos_token_id=2)),
}


def save_shape(folder: str, shape: str) -> None:
    """A random model of ``SHAPES[shape]`` saved in ``folder`` with the tests' tokenizer."""
    sys.path.insert(0, os.path.join(HERE, "..", "transformers_pack"))
    import llm_folders
    import torch
    import transformers

    name, kwargs = SHAPES[shape]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(getattr(transformers, name)(**kwargs))
    model.save_pretrained(folder)
    llm_folders.tokenizer().save_pretrained(folder)


def command(who: str, source: str, out: str, precision: str, cache: str, verify: bool = True) -> list[str]:
    if who.startswith("tonnx"):
        check = [] if verify else ["--no-verify"]
        return ["tonnx", "export-llm", source, "-o", out, "--precision", precision, "-q", *check]
    return [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", source, "-o", out,
            "-p", precision, "-e", "cpu", "-c", cache]


def timed(argv: list[str], env: dict | None = None) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MiB, CPU seconds: user + system) of one command."""
    report = tempfile.mktemp(suffix=".time")
    start = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-o", report, "-f", "%M %U %S", *argv], check=True, capture_output=True,
                   env=env)
    wall = time.perf_counter() - start
    with open(report) as f:
        peak, user, system = f.read().split()[-3:]
    os.unlink(report)
    return wall, int(peak) / 1024, float(user) + float(system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "int4"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", help="the folder holding llama/ or SHAPE/ (made when missing)")
    parser.add_argument("--shape", choices=sorted(SHAPES), help="a random model of these shapes")
    parser.add_argument("--source", help="export this transformers folder instead of the random Llama")
    parser.add_argument("--no-verify", action="store_true",
                        help="tonnx without its greedy check (the builder makes none)")
    parser.add_argument("--baseline", metavar="DIR",
                        help="also run tonnx from this checkout (PYTHONPATH=DIR/core:DIR/plugins), "
                             "interleaved, as tonnx-base: e.g. `git archive COMMIT | tar -x -C DIR`")
    args = parser.parse_args()
    root = args.keep or tempfile.mkdtemp(prefix="bench-llm-export-")
    source = args.source or os.path.join(root, args.shape or "llama")
    if not os.path.isdir(source):
        if args.shape:
            save_shape(source, args.shape)
        else:
            bench_llm_decode.save_llama(source)
    work = tempfile.mkdtemp(prefix="bench-llm-export-out-")
    results: dict = {}
    tools = ("tonnx", "tonnx-base", "builder") if args.baseline else ("tonnx", "builder")
    for _ in range(args.rounds):
        for precision in args.precisions:
            for who in tools:
                out = os.path.join(work, f"{who}-{precision}")
                shutil.rmtree(out, ignore_errors=True)
                argv = command(who, source, out, precision, os.path.join(work, "cache"), not args.no_verify)
                env = None
                if who == "tonnx-base":
                    base = os.path.abspath(args.baseline)
                    env = {**os.environ, "PYTHONPATH": os.pathsep.join([f"{base}/core", f"{base}/plugins"])}
                os.sync()  # the previous run's written data reaches the disk before this one starts
                results.setdefault((who, precision), []).append(timed(argv, env))
                print(who, precision, [round(x, 1) for x in results[(who, precision)][-1]], flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print(f"load average (uptime): {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"rounds {args.rounds}, median; tonnx's greedy check {'off' if args.no_verify else 'on'}")
    print(f"{'precision':10s}{'tool':>11s}{'wall s':>8s}{'/builder':>10s}{'CPU s':>8s}{'/builder':>10s}{'peak MiB':>10s}")
    for precision in args.precisions:
        b = [statistics.median(x) for x in zip(*results[("builder", precision)])]
        for who in tools:
            t = [statistics.median(x) for x in zip(*results[(who, precision)])]
            print(f"{precision:10s}{who:>11s}{t[0]:8.1f}{t[0] / b[0]:10.2f}{t[2]:8.1f}{t[2] / b[2]:10.2f}{t[1]:10.0f}")
    print({f"{w}-{p}": [[round(a, 1), round(m), round(c, 1)] for a, m, c in v] for (w, p), v in results.items()})


if __name__ == "__main__":
    main()
