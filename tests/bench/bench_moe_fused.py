"""One Mixtral sparse-MoE block: tonnx's graph against onnxruntime's fused ``com.microsoft`` MoE.

    python tests/bench/bench_moe_fused.py [--rounds 5] [--config tiny big]

Per config, one ``MixtralSparseMoeBlock`` with random weights (``_experts_implementation``
"grouped_mm", as ``AutoModelForCausalLM.from_config`` sets it) and two graphs, both with a
dynamic token count, input (1, T, hidden):

- ``tonnx``: ``tonnx.to_onnx`` of the block's ExportedProgram with the default dispatcher;
  the program is checked to call ``transformers::grouped_mm_fallback`` (converted by the
  transformers pack).
- ``MoE``: ``Reshape`` to (T, hidden), ``MatMul`` by the router weight (the router logits, as
  ``F.linear`` in ``MixtralTopKRouter``), then ``com.microsoft.MoE`` (k=top-k,
  activation_type "swiglu", swiglu_fusion=1, activation_alpha=1, activation_beta=0,
  normalize_routing_weights=1, no swiglu_limit) on the same weights. onnxruntime's CPU kernel
  accepts only interleaved gate/up rows (swiglu_fusion=1) and no FC3 input, so fc1 is
  ``gate_up_proj`` with its gate and up halves interleaved row by row; fc2 is ``down_proj``.

Each round opens fresh sessions for both graphs (default session options, CPU), warms them
up, then calls them in turns (tonnx, MoE, MoE, tonnx, ...; the first one alternates between
rounds) for every token count; the table gives the median over all calls of all rounds and
the range of the per-round medians. Both outputs are compared with torch eager first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort
import torch
import transformers
from onnx import TensorProto
from onnx import helper as oh
from onnx import numpy_helper as nh
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

import tonnx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "transformers_pack"))
from moe_models import mixtral  # noqa: E402

TOKENS = (1, 16, 256)
FALLBACK = "transformers.grouped_mm_fallback.default"


def big_config() -> transformers.MixtralConfig:
    """Mixtral-like, smaller than Mixtral-8x7B (hidden 4096, intermediate 14336)."""
    return transformers.MixtralConfig(
        hidden_size=1024, intermediate_size=3584, num_local_experts=8, num_experts_per_tok=2
    )


CONFIGS = {"tiny": mixtral, "big": big_config}


def build_block(config: transformers.MixtralConfig, seed: int = 0) -> MixtralSparseMoeBlock:
    config._experts_implementation = "grouped_mm"  # what a model built by transformers uses
    torch.manual_seed(seed)
    block = MixtralSparseMoeBlock(config).eval()
    with torch.no_grad():
        for param in block.parameters():  # the experts' parameters are allocated uninitialized
            param.normal_(0.0, param.shape[-1] ** -0.5)
    return block


def tonnx_graph(block: MixtralSparseMoeBlock) -> bytes:
    x = torch.randn(1, 16, block.gate.hidden_dim)
    ep = torch.export.export(block, (x,), dynamic_shapes=({1: torch.export.Dim("tokens")},))
    targets = {str(node.target) for node in ep.graph.nodes if node.op == "call_function"}
    if FALLBACK not in targets:
        raise RuntimeError(f"the exported block does not call {FALLBACK}; it calls {sorted(targets)}")
    return tonnx.to_onnx(ep).SerializeToString()


def fused_graph(block: MixtralSparseMoeBlock) -> bytes:
    hidden, top_k = block.gate.hidden_dim, block.top_k
    gate_up = block.experts.gate_up_proj.detach().numpy()  # (E, 2I, H): [gate | up]
    inter = gate_up.shape[1] // 2
    fc1 = np.empty_like(gate_up)
    fc1[:, 0::2], fc1[:, 1::2] = gate_up[:, :inter], gate_up[:, inter:]  # g0, l0, g1, l1, ...
    inits = [
        nh.from_array(np.array([-1, hidden], dtype=np.int64), "rows"),
        nh.from_array(block.gate.weight.detach().numpy().T.copy(), "router_weight"),
        nh.from_array(fc1, "fc1"),
        nh.from_array(block.experts.down_proj.detach().numpy(), "fc2"),  # (E, H, I)
    ]
    nodes = [
        oh.make_node("Reshape", ["x", "rows"], ["x2"]),
        oh.make_node("MatMul", ["x2", "router_weight"], ["router_logits"]),
        oh.make_node(
            "MoE", ["x2", "router_logits", "fc1", "", "fc2"], ["y2"], domain="com.microsoft",
            k=top_k, activation_type="swiglu", swiglu_fusion=1, activation_alpha=1.0,
            activation_beta=0.0, normalize_routing_weights=1,
        ),
        oh.make_node("Shape", ["x"], ["x_shape"]),
        oh.make_node("Reshape", ["y2", "x_shape"], ["y"]),
    ]
    graph = oh.make_graph(
        nodes, "mixtral_moe_fused",
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, "tokens", hidden])],
        [oh.make_tensor_value_info("y", TensorProto.FLOAT, [1, "tokens", hidden])],
        inits,
    )
    opsets = [oh.make_opsetid("", 20), oh.make_opsetid("com.microsoft", 1)]
    return oh.make_model(graph, opset_imports=opsets).SerializeToString()


def session(model: bytes) -> ort.InferenceSession:
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


def check(block, models: dict, feeds: dict) -> None:
    sessions = {name: session(model) for name, model in models.items()}
    for tokens, x in feeds.items():
        with torch.no_grad():
            want = block(torch.from_numpy(x)).numpy()
        diffs = []
        for name, sess in sessions.items():
            got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
            diffs.append(f"{name} {np.abs(got - want).max():.2e}")
        print(f"  tokens {tokens:4d}: max abs diff against torch: {', '.join(diffs)}")
    x = feeds[16] * 300  # gate values in the hundreds: a SwiGLU clamp would show here
    with torch.no_grad():
        want = block(torch.from_numpy(x)).numpy()
    diffs = []
    for name, sess in sessions.items():
        got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        diffs.append(f"{name} {np.abs(got - want).max() / np.abs(want).max():.2e}")
    print(f"  tokens   16, input x300: max abs diff / max abs output: {', '.join(diffs)}")


def one_round(models: dict, feeds: dict, times: dict, round_index: int) -> None:
    names = list(models) if round_index % 2 == 0 else list(reversed(models))
    sessions = {name: session(models[name]) for name in names}
    for tokens, x in feeds.items():
        for name in names:
            times[tokens, name].append([])
        inputs = {name: {sess.get_inputs()[0].name: x} for name, sess in sessions.items()}
        start = time.perf_counter()
        for name in names:  # warm-up
            sessions[name].run(None, inputs[name])
        calls = max(3, min(40, int(0.6 / (time.perf_counter() - start))))
        for call in range(calls):
            for name in names if call % 2 == 0 else reversed(names):
                begin = time.perf_counter()
                sessions[name].run(None, inputs[name])
                times[tokens, name][-1].append(time.perf_counter() - begin)


def _summary(rounds: list[list[float]]) -> tuple[float, str]:
    """Median over every call of every round, and the range of the per-round medians."""
    per_round = [statistics.median(r) * 1e3 for r in rounds]
    return statistics.median([t for r in rounds for t in r]), f"{min(per_round):.3g}-{max(per_round):.3g}"


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def bench(config_name: str, rounds: int) -> None:
    block = build_block(CONFIGS[config_name]())
    cfg = block.gate
    print(f"\n{config_name}: hidden {cfg.hidden_dim}, intermediate {block.experts.intermediate_dim}, "
          f"{cfg.num_experts} experts, top-{cfg.top_k}; load average {loadavg()}")
    models = {"tonnx": tonnx_graph(block), "MoE": fused_graph(block)}
    gen = torch.Generator().manual_seed(1)
    feeds = {t: torch.randn(1, t, cfg.hidden_dim, generator=gen).numpy() for t in TOKENS}
    check(block, models, feeds)
    times = {(t, name): [] for t in TOKENS for name in models}
    for r in range(rounds):
        one_round(models, feeds, times, r)
    print(f"  median of {rounds} rounds (fresh sessions each), load average after: {loadavg()}")
    print("  | tokens | tonnx (grouped_mm_fallback) | com.microsoft.MoE | tonnx / MoE | calls of each, all rounds |")
    print("  |---|---|---|---|---|")
    for t in TOKENS:
        a, b = (_summary(times[t, name]) for name in ("tonnx", "MoE"))
        calls = sum(len(r) for r in times[t, "MoE"])
        print(f"  | {t} | {a[0] * 1e3:.3f} ms ({a[1]}) | {b[0] * 1e3:.3f} ms ({b[1]}) | {a[0] / b[0]:.2f}x | {calls} |")
    print("  (in parentheses: the lowest and highest of the per-round medians, ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--config", nargs="+", choices=sorted(CONFIGS), default=["tiny", "big"])
    opts = parser.parse_args()
    print(f"onnxruntime {ort.__version__}, torch {torch.__version__}, transformers {transformers.__version__}")
    for name in opts.config:
        bench(name, opts.rounds)


if __name__ == "__main__":
    main()
