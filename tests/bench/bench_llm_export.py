"""Export time of ``tonnx export-llm`` against onnxruntime-genai's builder (issue 18 s3).

    python tests/bench/bench_llm_export.py --keep /tmp/llm-decode --rounds 2
    python tests/bench/bench_llm_export.py --source /tmp/llama1b --rounds 1   # a folder of yours

The random Llama of ``bench_llm_decode.py`` (4 layers, hidden 512, vocab 32000) is exported
by both tools at each precision, interleaved (tonnx, builder, tonnx, builder, ...), each as
its own process under ``/usr/bin/time``: wall time and peak RSS of the whole command (imports,
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


def command(who: str, source: str, out: str, precision: str, cache: str, verify: bool = True) -> list[str]:
    if who == "tonnx":
        check = [] if verify else ["--no-verify"]
        return ["tonnx", "export-llm", source, "-o", out, "--precision", precision, "-q", *check]
    return [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", source, "-o", out,
            "-p", precision, "-e", "cpu", "-c", cache]


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one command."""
    report = tempfile.mktemp(suffix=".time")
    start = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-o", report, "-f", "%M", *argv], check=True, capture_output=True)
    wall = time.perf_counter() - start
    with open(report) as f:
        peak = int(f.read().split()[-1]) / 1024
    os.unlink(report)
    return wall, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "int4"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", help="the folder holding llama/ (made when missing)")
    parser.add_argument("--source", help="export this transformers folder instead of the random Llama")
    parser.add_argument("--no-verify", action="store_true",
                        help="tonnx without its greedy check (the builder makes none)")
    args = parser.parse_args()
    root = args.keep or tempfile.mkdtemp(prefix="bench-llm-export-")
    source = args.source or os.path.join(root, "llama")
    if not os.path.isdir(source):
        bench_llm_decode.save_llama(source)
    work = tempfile.mkdtemp(prefix="bench-llm-export-out-")
    results: dict = {}
    for _ in range(args.rounds):
        for precision in args.precisions:
            for who in ("tonnx", "builder"):
                out = os.path.join(work, f"{who}-{precision}")
                shutil.rmtree(out, ignore_errors=True)
                argv = command(who, source, out, precision, os.path.join(work, "cache"), not args.no_verify)
                os.sync()  # the previous run's written data reaches the disk before this one starts
                results.setdefault((who, precision), []).append(timed(argv))
                print(who, precision, [round(x, 1) for x in results[(who, precision)][-1]], flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print(f"load average (uptime): {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"rounds {args.rounds}, median; tonnx's greedy check {'off' if args.no_verify else 'on'}")
    print(f"{'precision':10s}{'tonnx s':>10s}{'builder s':>11s}{'ratio':>8s}{'tonnx MiB':>11s}{'builder MiB':>13s}")
    for precision in args.precisions:
        t = [statistics.median(x) for x in zip(*results[("tonnx", precision)])]
        b = [statistics.median(x) for x in zip(*results[("builder", precision)])]
        print(f"{precision:10s}{t[0]:10.1f}{b[0]:11.1f}{t[0] / b[0]:8.2f}{t[1]:11.0f}{b[1]:13.0f}")
    print({f"{w}-{p}": [[round(a, 1), round(m)] for a, m in v] for (w, p), v in results.items()})


if __name__ == "__main__":
    main()
