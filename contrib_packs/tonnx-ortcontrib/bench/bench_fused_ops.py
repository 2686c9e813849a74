"""Is a com.microsoft op faster than what it would replace? Measured op by op.

    python contrib_packs/tonnx-ortcontrib/bench/bench_fused_ops.py

Each case builds two small graphs (8 chained uses at the Llama benchmark's size,
(2, 32, 256), or (2, 32, 1024) for the MLP activation) and runs them in turns in one
process (default session options, CPU); it prints the median latency of each. The pack
emits a fused op only where it wins here or in bench_ortcontrib.py.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto
from onnx import helper as oh

HIDDEN = (2, 32, 256)


def _model(nodes, inputs, output, inits=()):
    graph = oh.make_graph(
        nodes,
        "g",
        [oh.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [oh.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        list(inits),
    )
    opsets = [oh.make_opsetid("", 20), oh.make_opsetid("com.microsoft", 1)]
    return oh.make_model(graph, opset_imports=opsets).SerializeToString()


def skip_norm(fused: bool, n: int = 8) -> bytes:
    """Residual Add + RMSNorm, as Add + SimplifiedLayerNormalization or one Skip op."""
    weight = onnx.numpy_helper.from_array(np.random.rand(HIDDEN[-1]).astype(np.float32), "w")
    nodes, x = [], "x"
    for i in range(n):
        if fused:
            nodes.append(oh.make_node(
                "SkipSimplifiedLayerNormalization", [x, "r", "w"], [f"y{i}", "", "", f"s{i}"],
                domain="com.microsoft", epsilon=1e-6,
            ))
        else:
            nodes.append(oh.make_node("Add", [x, "r"], [f"s{i}"]))
            nodes.append(oh.make_node(
                "SimplifiedLayerNormalization", [f"s{i}", "w"], [f"y{i}"], axis=-1, epsilon=1e-6, stash_type=1
            ))
        nodes.append(oh.make_node("Add", [f"y{i}", f"s{i}"], [f"z{i}"]))
        x = f"z{i}"
    return _model(nodes, [("x", HIDDEN), ("r", HIDDEN)], x, [weight])


def gelu(kind: str, n: int = 8) -> bytes:
    nodes, x = [], "x"
    for i in range(n):
        if kind == "Gelu-20":
            nodes.append(oh.make_node("Gelu", [x], [f"y{i}"]))
        elif kind == "Gelu-20 tanh":
            nodes.append(oh.make_node("Gelu", [x], [f"y{i}"], approximate="tanh"))
        else:
            nodes.append(oh.make_node(kind, [x], [f"y{i}"], domain="com.microsoft"))
        x = f"y{i}"
    return _model(nodes, [("x", (2, 32, 1024))], x)


def medians_us(models: dict, feeds: dict, turns: int = 1500) -> dict:
    sessions = {
        k: onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"]) for k, m in models.items()
    }
    times = {k: [] for k in models}
    names = list(models)
    for turn in range(turns):
        for k in names if turn % 2 == 0 else reversed(names):
            session = sessions[k]
            wanted = {i.name: feeds[i.name] for i in session.get_inputs()}
            begin = time.perf_counter()
            session.run(None, wanted)
            times[k].append(time.perf_counter() - begin)
    return {k: round(statistics.median(t) * 1e6, 1) for k, t in times.items()}


def main() -> None:
    rng = np.random.default_rng(0)
    feeds = {"x": rng.random(HIDDEN, dtype=np.float32), "r": rng.random(HIDDEN, dtype=np.float32)}
    print("skip + RMSNorm x8 (us):", medians_us(
        {"Add + SimplifiedLayerNormalization": skip_norm(False), "SkipSimplifiedLayerNormalization": skip_norm(True)},
        feeds,
    ))
    feeds = {"x": rng.random((2, 32, 1024), dtype=np.float32)}
    kinds = ("Gelu-20", "Gelu", "Gelu-20 tanh", "FastGelu")
    print("gelu x8 (us):", medians_us({k: gelu(k) for k in kinds}, feeds))


if __name__ == "__main__":
    main()
