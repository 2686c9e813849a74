"""int4 experts (QMoE) of a mixture-of-experts folder: size and decode speed (#18 s2).

    python tests/bench/bench_moe_int4.py --rounds 5 --keep /tmp/moe-int4

A random Mixtral (4 layers, hidden 512, 8 experts of intermediate size 1024, top-2, vocab
32000) is exported by ``export_llm`` three times: fp32; int4 with the experts left float32
(the ``MoE`` op: what int4 wrote before QMoE, made here by turning the experts rule off);
int4 with the experts as ``QMoE``. onnxruntime-genai's builder refuses Mixtral, so there is
no peer to set beside. Printed: each folder's data file size, its greedy check, and in
onnxruntime_genai (one process, interleaved rounds, medians) the decode time per token
(64-token prompt, 128 greedy new tokens) and the prefill of a 512-token prompt.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "transformers_pack"))

import bench_llm_decode  # noqa: E402

CONFIG = dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
              vocab_size=32000, max_position_embeddings=1024, intermediate_size=1024,
              num_local_experts=8, num_experts_per_tok=2, bos_token_id=1, eos_token_id=2)
VARIANTS = ("fp32", "int4 float experts", "int4 QMoE")


def save_mixtral(folder: str) -> None:
    import llm_folders
    import torch
    import transformers

    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(transformers.MixtralConfig(**CONFIG)).save_pretrained(folder)
    llm_folders.tokenizer().save_pretrained(folder)


def export(source: str, root: str, variant: str):
    from tonnx_transformers.llm import quantize_experts
    from tonnx_transformers.llm.export import export_llm

    out = os.path.join(root, variant.replace(" ", "-"))
    precision = variant.split()[0]
    start = time.perf_counter()
    if variant == "int4 float experts":
        with mock.patch.object(quantize_experts, "experts_down_names", lambda model: frozenset()):
            result = export_llm(source, out, precision=precision)
    else:
        result = export_llm(source, out, precision=precision)
    return out, time.perf_counter() - start, result.check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    root = args.keep or tempfile.mkdtemp(prefix="bench-moe-int4-")
    source = os.path.join(root, "mixtral")
    if not os.path.isdir(source):
        save_mixtral(source)
    folders = {}
    for variant in VARIANTS:
        out, seconds, check = export(source, root, variant)
        size = os.path.getsize(os.path.join(out, "model.onnx.data")) / 1e6
        print(f"{variant:<20} data {size:8.1f} MB  export {seconds:5.1f} s  "
              f"greedy check: {check.steps} steps, max abs diff {check.max_abs_diff:.2e}", flush=True)
        folders[variant] = out

    import onnxruntime_genai as og

    bench_llm_decode.CONFIG = {**bench_llm_decode.CONFIG, "vocab_size": CONFIG["vocab_size"]}
    models = {variant: og.Model(folder) for variant, folder in folders.items()}
    run = {"decode": lambda model: bench_llm_decode.decode(og, model),
           "prefill": lambda model: bench_llm_decode.prefill(og, model)}
    for model in models.values():  # warm-up
        for what in run:
            run[what](model)
    times = {variant: {what: [] for what in run} for variant in models}
    for _ in range(args.rounds):
        for variant, model in models.items():
            for what in run:
                times[variant][what].append(run[what](model))
    print(f"rounds {args.rounds}, median; decode: prompt {bench_llm_decode.PROMPT}, "
          f"{bench_llm_decode.NEW} new tokens; prefill {bench_llm_decode.LONG}")
    for variant in models:
        decode, prefill = (statistics.median(times[variant][w]) * 1e3 for w in ("decode", "prefill"))
        print(f"{variant:<20} decode {decode:7.2f} ms/token  prefill {prefill:8.1f} ms")


if __name__ == "__main__":
    main()
