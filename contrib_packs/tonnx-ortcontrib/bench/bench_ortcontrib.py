"""onnxruntime latency of models exported with and without the ortcontrib pack, in one run.

    pip install ./contrib_packs/tonnx-ortcontrib
    python contrib_packs/tonnx-ortcontrib/bench/bench_ortcontrib.py            # all cases
    python contrib_packs/tonnx-ortcontrib/bench/bench_ortcontrib.py --cases llama4 --rounds 3

Cases: the Llama 4-layer benchmark config of tests/bench/bench_export.py (batch 2 x 32
tokens, no mask), Llama, Mistral, BERT and GPT2 from the model list
(tests/models/transformer_models.py, batch 2 x 12 tokens, left padding in one row), and a
4-layer Mixtral, Qwen3-MoE, GPT-OSS and DeepSeek-V3 at the Llama config's sizes (8 experts,
top-2, batch 2 x 32: their expert blocks become ``MoE``). Each
model is exported twice, with the installed packs (``ortcontrib`` on, priority 200) and with
``Dispatcher(packs=["no:ortcontrib"])`` (the aten pack's standard-domain graph). Both graphs
run side by side in fresh onnxruntime-only processes, in turns of 20 ms of consecutive runs
per graph, the order flipping every turn, both session creation orders (``BLOCK_S``: runs
switched one by one measure how the two sessions evict each other's weights and wake each
other's spinning threads, which a user's loop never does); a round gives each graph's
median latency, the table shows the median over rounds of each graph and of the per-round
ratio. Default session options (2 threads here), and ``intra_op_num_threads=1``, which
shows what the graphs cost on a loaded machine.
Both results are checked against torch.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, ROOT)

CASES = ("llama4", "llama", "mistral", "bert", "gpt2", "mixtral4", "qwen3moe4", "gptoss4", "deepseek4")


def moe(case: str):
    """A 4-layer Mixtral, Qwen3-MoE, GPT-OSS or DeepSeek-V3 at the Llama benchmark's sizes
    (hidden 256, 4 heads, 2 kv heads, vocab 1000), 8 experts of intermediate 512, top-2,
    batch 2 x 32 tokens."""
    import transformers

    from tests.bench.bench_export import LLAMA, LogitsOnly

    common = {**LLAMA, "num_hidden_layers": 4, "num_experts_per_tok": 2}
    if case == "mixtral4":
        config = transformers.MixtralConfig(**common, num_local_experts=8)
    elif case == "deepseek4":  # layer 0 dense, 1-3 MoE with a shared expert; latent attention
        config = transformers.DeepseekV3Config(
            **{**common, "num_key_value_heads": 4}, moe_intermediate_size=512, n_routed_experts=8,
            n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1, q_lora_rank=64,
            kv_lora_rank=32, qk_nope_head_dim=32, qk_rope_head_dim=32, v_head_dim=64,
        )  # fmt: skip
    elif case == "gptoss4":  # attention sinks: GPT-OSS's attention stays standard-domain
        config = transformers.GptOssConfig(**common, num_local_experts=8, head_dim=64, sliding_window=128)
    else:
        config = transformers.Qwen3MoeConfig(
            **common, moe_intermediate_size=512, num_experts=8, head_dim=64, norm_topk_prob=True,
            decoder_sparse_step=1, mlp_only_layers=[],
        )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    return LogitsOnly(model), (torch.randint(0, 1000, (2, 32)),)


def build(case: str):
    from tests.bench import bench_export
    from tests.models import transformer_models

    if case == "llama4":
        return bench_export.llama(4)
    if case in ("mixtral4", "qwen3moe4", "gptoss4", "deepseek4"):
        return moe(case)
    return getattr(transformer_models, case)()


def export_both(model, args) -> dict:
    import tonnx

    return {
        "aten": tonnx.to_onnx(model, args, dispatcher=tonnx.Dispatcher(packs=["no:ortcontrib"])),
        "ortcontrib": tonnx.to_onnx(model, args),
    }


def fused_ops(onx) -> str:
    counts = collections.Counter(n.op_type for n in onx.graph.node if n.domain == "com.microsoft")
    counts.update(n.op_type for n in onx.graph.node if n.op_type == "SimplifiedLayerNormalization")
    return ", ".join(f"{op} x{c}" for op, c in sorted(counts.items()))


#: each session runs this long in a row per turn (tests/bench/ort_latency.py: runs switched
#: one by one reload each other's weights and wake each other's spinning thread pools)
BLOCK_S = 0.02


def child_latencies(threads: int, feeds_path: str, paths: list[str], budget_s: float = 4.0) -> list[float]:
    """Median latency (ms) of each model, sessions with ``threads`` intra-op threads (0:
    onnxruntime's default), in turns of ``BLOCK_S`` of consecutive runs, the order flipping
    every turn."""
    from tests.bench.ort_latency import turn_medians_ms, warm_sessions

    with np.load(feeds_path) as npz:
        feeds = [npz[f"arr_{i}"] for i in range(len(npz.files))]
    return turn_medians_ms(warm_sessions(paths, feeds, threads), budget_s, max_turns=3000, block_s=BLOCK_S)


def latencies(models: dict, feeds: list, threads: int) -> dict:
    """Both session orders in fresh onnxruntime-only processes, mean of the two medians."""
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
                [sys.executable, __file__, "--child", str(threads), feeds_path, *(paths[n] for n in order)],
                capture_output=True, text=True, check=True,
            )
            for name, ms in zip(order, json.loads(out.stdout.strip().splitlines()[-1])):
                measured[name].append(ms)
    return {name: statistics.mean(ms) for name, ms in measured.items()}


def _summary(per_round: list[dict]) -> tuple[dict, float]:
    ms = {k: statistics.median(r[k] for r in per_round) for k in per_round[0]}
    return ms, statistics.median(r["ortcontrib"] / r["aten"] for r in per_round)


def bench_case(case: str, rounds: int) -> dict:
    from tests.bench.bench_export import max_diff

    model, args = build(case)
    models = export_both(model, args)
    if not fused_ops(models["ortcontrib"]):
        raise SystemExit("the ortcontrib pack is not active: pip install ./contrib_packs/tonnx-ortcontrib")
    feeds = [a.numpy() for a in args]
    default = _summary([latencies(models, feeds, 0) for _ in range(rounds)])
    single = _summary([latencies(models, feeds, 1) for _ in range(rounds)])
    return {
        "case": case,
        "nodes": {k: len(m.graph.node) for k, m in models.items()},
        "default": default,
        "single": single,
        "diff": {k: max_diff(m, model, args) for k, m in models.items()},
        "fused": fused_ops(models["ortcontrib"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=3, help="latency processes per case")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(child_latencies(int(opts.child[0]), opts.child[1], opts.child[2:])))
        return
    import onnxruntime

    torch.set_num_threads(1)  # the exports; latency is measured in other processes
    print(f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}, {os.cpu_count()} cores")
    print()
    print(
        "| model | nodes aten / ortcontrib | ORT ms aten / ortcontrib (default) | ratio | "
        "ORT ms aten / ortcontrib (1 thread) | ratio | max diff vs torch (aten / ortcontrib) | fused ops |"
    )
    print("|---|---|---|---|---|---|---|---|")
    ratios = {"default": [], "single": []}
    for case in opts.cases.split(","):
        r = bench_case(case, opts.rounds)
        cells = []
        for kind in ("default", "single"):
            ms, ratio = r[kind]
            ratios[kind].append(ratio)
            cells.append(f"{ms['aten']:.3f} / {ms['ortcontrib']:.3f} | {ratio:.2f}")
        print(
            f"| {case} | {r['nodes']['aten']} / {r['nodes']['ortcontrib']} | {cells[0]} | {cells[1]} | "
            f"{r['diff']['aten']:.1e} / {r['diff']['ortcontrib']:.1e} | {r['fused']} |",
            flush=True,
        )
    for kind, values in ratios.items():
        print(f"geometric mean ratio ({kind}): {float(np.exp(np.mean(np.log(values)))):.2f}")


if __name__ == "__main__":
    main()
