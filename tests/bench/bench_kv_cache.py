"""Benchmark: a causal LM exported with its KV cache, side by side in one run.

    python tests/bench/bench_kv_cache.py                  # 4-layer Llama, hidden 256
    python tests/bench/bench_kv_cache.py --layers 2 --repeat 3 --past 64

Prints:
- export time: ``tonnx.to_onnx(model, kwargs={..., "past_key_values": DynamicCache}, ...)``
  against ``torch.export.export`` of the same call (same dynamic shapes, tonnx's export
  patches), timed in turns; medians and the ratio (target: at most 1.25x);
- decode-step latency in onnxruntime (one new token, ``--past`` cached tokens): tonnx's model
  (the aten pack alone: the default dispatcher) against torch.onnx.export(dynamo=True) of a
  hand-written wrapper with flat key/value tensors (the only way torch.onnx exports a
  cache); sessions run in turns in a fresh onnxruntime-only process (see ort_latency.py);
- both models' max abs difference from torch on the decode step, and their node counts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from bench_export import describe_machine, median_times, ort_latencies  # noqa: E402

import tonnx  # noqa: E402

DYNAMIC = {
    "input_ids": {0: "batch", 1: "seq"},
    "attention_mask": {0: "batch", 1: "total"},
    "position_ids": {0: "batch", 1: "seq"},
    "past_key_values": {0: "batch", 2: "past"},
}


#: the benchmark decoder's sizes (bench_decode.py builds its Mixtral from them too)
SIZES = dict(
    hidden_size=256,
    intermediate_size=512,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=1000,
    max_position_embeddings=1024,
    attn_implementation="sdpa",
)


def llama(layers: int):
    import transformers

    config = transformers.LlamaConfig(num_hidden_layers=layers, **SIZES)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


def inputs(config, batch: int, seq: int, past: int) -> dict:
    from transformers.cache_utils import DynamicCache

    gen = torch.Generator().manual_seed(past + seq)
    heads = config.num_key_value_heads
    head_dim = config.hidden_size // config.num_attention_heads
    cache = DynamicCache(
        [
            tuple(torch.randn(batch, heads, past, head_dim, generator=gen) for _ in range(2))
            for _ in range(config.num_hidden_layers)
        ]
    )
    return {
        "input_ids": torch.randint(0, config.vocab_size, (batch, seq), generator=gen),
        "attention_mask": torch.ones(batch, past + seq, dtype=torch.int64),
        "position_ids": torch.arange(past, past + seq).expand(batch, seq).contiguous(),
        "past_key_values": cache,
    }


class FlatCache(torch.nn.Module):
    """What torch.onnx.export needs: flat key/value tensors in, flat presents out."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, position_ids, *flat):
        from transformers.cache_utils import DynamicCache

        cache = DynamicCache([(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)])
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
        )
        presents = [t for layer in out.past_key_values.layers for t in (layer.keys, layer.values)]
        return (out.logits, *presents)


def flat(kwargs: dict) -> tuple:
    cache = kwargs["past_key_values"]
    return (
        kwargs["input_ids"],
        kwargs["attention_mask"],
        kwargs["position_ids"],
        *(t for layer in cache.layers for t in (layer.keys, layer.values)),
    )


def torch_onnx_flat(model, kwargs: dict):
    from torch.export import Dim

    args = flat(kwargs)
    dyn = Dim.DYNAMIC  # named Dims fail: torch.export asks for total = past + seq, min 4
    shapes = ({0: dyn, 1: dyn}, {0: dyn, 1: dyn}, {0: dyn, 1: dyn}, (({0: dyn, 2: dyn},) * (len(args) - 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            FlatCache(model), args, dynamic_shapes=shapes, dynamo=True, verbose=False
        )
    return program.model_proto


def max_diff(onx, model, kwargs: dict) -> float:
    from tonnx.testing import run_onnxruntime

    feeds = [t.numpy() for t in flat(kwargs)]
    got = run_onnxruntime(onx, feeds)
    with torch.no_grad():
        out = FlatCache(model)(*flat(kwargs))
    return max(float(np.abs(g - e.numpy()).max()) for g, e in zip(got, out))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--past", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1)
    opts = parser.parse_args()
    print(describe_machine())
    model = llama(opts.layers)
    example = inputs(model.config, 2, 3, 8)

    def torch_export():
        with tonnx.export_patches():
            from tonnx.pipeline.capture._dynamic_shapes import convert

            spec, _ = convert(model, (), example, DYNAMIC)
            return torch.export.export(model, (), kwargs=example, dynamic_shapes=spec)

    def tonnx_export():
        return tonnx.to_onnx(model, kwargs=example, dynamic_shapes=DYNAMIC)

    tonnx_export()  # warm-up: imports, pack loading
    times, results = median_times({"torch.export": torch_export, "tonnx.to_onnx": tonnx_export}, opts.repeat)
    begin = time.perf_counter()
    reference = torch_onnx_flat(model, example)
    torch_onnx_s = time.perf_counter() - begin
    onx = results["tonnx.to_onnx"]

    step = inputs(model.config, opts.batch, 1, opts.past)
    feeds = [t.numpy() for t in flat(step)]
    latency = ort_latencies({"tonnx": onx, "torch.onnx(flat wrapper)": reference}, feeds)
    print(f"\nLlama {opts.layers} layers, hidden 256, decode step: batch {opts.batch}, 1 token, past {opts.past}")
    print("| | export (s) | / torch.export | nodes | decode step ORT (ms) | max abs diff |")
    print("|---|---|---|---|---|---|")
    print(f"| torch.export.export | {times['torch.export']:.3f} | 1.00x | | | |")
    print(
        f"| tonnx.to_onnx | {times['tonnx.to_onnx']:.3f} | "
        f"{times['tonnx.to_onnx'] / times['torch.export']:.2f}x | {len(onx.graph.node)} | "
        f"{latency['tonnx']:.3f} | {max_diff(onx, model, step):.2g} |"
    )
    print(
        f"| torch.onnx.export(dynamo=True), flat wrapper | {torch_onnx_s:.3f} (1 run) | "
        f"{torch_onnx_s / times['torch.export']:.2f}x | {len(reference.graph.node)} | "
        f"{latency['torch.onnx(flat wrapper)']:.3f} | {max_diff(reference, model, step):.2g} |"
    )


if __name__ == "__main__":
    main()
