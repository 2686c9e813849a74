"""Quantized models: tonnx beside torch.onnx and beside onnxruntime's own quantize_static.

    /work/venvbench/bin/python tests/bench/bench_quant.py [resnet18 mobilenet_v2] [--size 224]
    /work/venvbench/bin/python tests/bench/bench_quant.py --weight-only [--width 1024]

For each torchvision model (random weights, PT2E with the XNNPACK symmetric config,
per-channel int8 weights, calibrated on 4 random batches):

- which exporter exports the converted model (tonnx.to_onnx, torch.onnx.export(dynamo=True)),
  the file size, the max difference from the converted PyTorch model in onnxruntime, with
  its QDQ fusions (default options) and without (basic optimizations: the graph's own
  arithmetic), in steps of the output's quantization;
- onnxruntime latency (ms, medians of interleaved runs in a fresh process,
  tests/bench/ort_latency.py) of: the fp32 model (tonnx), tonnx's int8 export, torch.onnx's
  int8 export, and onnxruntime's quantize_static (QDQ, per-channel, int8 activations and
  weights, MinMax calibration on the same batches) of tonnx's fp32 export.

``--weight-only``: a 4-layer stack of bias-free width x width linears (a decoder's
projections; one row, a decode step), torchao int8 weight-only and int4 group-32 weight-only
(``quantize_``, unwrapped), exported by tonnx (opset 21) and torch.onnx: file size, max
difference from the quantized PyTorch model with onnxruntime's fusions (default options)
and without, latency beside the fp32 model.

``--schemes``: every scheme the quant pack converts, on a 3-layer width x width MLP (bias,
ReLU; ``--rows`` rows): PT2E static, dynamic, weight-only (the XNNPACK config without
activations, on the Linear modules) and QAT (``prepare_qat_pt2e``, one SGD step,
``convert_pt2e``), torchao int8 weight-only, int8 dynamic activations and int4 group-32
weight-only, exported by tonnx and torch.onnx (opset 21). For each export: file size, ops
after onnxruntime's optimizations, max difference from the quantized PyTorch model with
onnxruntime's fusions (default options) and without (basic level), and the one-thread
latency (ms): ``--rounds`` rounds of interleaved medians (tests/bench/ort_latency.py) in a
fresh process, median and spread. ``--runtime PYTHON`` (repeatable) measures the same files
with another interpreter's onnxruntime too (``/work/venv131/bin/python``: 1.31.1).

Prints one JSON line per model (per scheme and runtime with ``--schemes``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def pt2e(model, batches):
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    program = torch.export.export(model, (batches[0],)).module()
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    prepared = prepare_pt2e(program, quantizer)
    for x in batches:
        prepared(x)
    return convert_pt2e(prepared)


def run(path, x, fused=True):
    import onnxruntime as ort

    options = ort.SessionOptions()
    if not fused:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]


def output_step(path) -> float | None:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    inits = {i.name: i for i in model.graph.initializer}
    dq = [n for n in model.graph.node if n.op_type == "DequantizeLinear"]
    if not dq or dq[-1].input[1] not in inits:
        return None
    return float(numpy_helper.to_array(inits[dq[-1].input[1]]).reshape(-1)[0])


def export(name, fn, path, result):
    begin = time.perf_counter()
    try:
        fn(path)
    except Exception as e:  # a benchmark reports what fails, with the error's first line
        result[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        return False
    result[name] = {"export_s": round(time.perf_counter() - begin, 2), "MB": round(os.path.getsize(path) / 1e6, 3)}
    return True


def quantize_static(fp32_path, out_path, batches):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType
    from onnxruntime.quantization import quantize_static as ort_quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self, name):
            self.feeds = iter([{name: b.numpy()} for b in batches])

        def get_next(self):
            return next(self.feeds, None)

    import onnx

    name = onnx.load(fp32_path).graph.input[0].name
    pre = out_path + ".pre.onnx"
    quant_pre_process(fp32_path, pre)
    ort_quantize_static(pre, out_path, Reader(name), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


def bench(name, size, folder):
    import torch
    import torchvision

    import tonnx

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    batches = [torch.randn(1, 3, size, size) for _ in range(4)]
    x = batches[0]
    result = {"model": name, "size": size}
    begin = time.perf_counter()
    quantized = pt2e(model, batches)
    result["pt2e_s"] = round(time.perf_counter() - begin, 1)
    with torch.no_grad():
        expected = quantized(x).numpy()
    paths = {k: os.path.join(folder, f"{name}_{k}.onnx") for k in ("fp32", "tonnx", "torch_onnx", "ort_static")}
    export("fp32", lambda p: tonnx.to_onnx(model, (x,), filename=p), paths["fp32"], result)
    export("tonnx", lambda p: tonnx.to_onnx(quantized, (x,), filename=p), paths["tonnx"], result)
    export("torch_onnx", lambda p: torch.onnx.export(quantized, (x,), p, dynamo=True, external_data=False),
           paths["torch_onnx"], result)
    export("ort_static", lambda p: quantize_static(paths["fp32"], p, batches), paths["ort_static"], result)
    with torch.no_grad():
        reference = model(x).numpy()
    for key in ("tonnx", "torch_onnx", "ort_static", "fp32"):
        if "error" in result[key]:
            continue
        target = reference if key in ("fp32", "ort_static") else expected
        step = output_step(paths[key])
        for fused in (True, False):
            diff = float(np.abs(run(paths[key], x, fused) - target).max())
            label = "max_diff" + ("" if fused else "_unfused")
            result[key][label] = diff
            if step and key != "ort_static":
                result[key][label + "_steps"] = round(diff / step, 2)
    feeds = os.path.join(folder, "feeds.npz")
    np.savez(feeds, x.numpy())
    keys = [k for k in ("fp32", "tonnx", "torch_onnx", "ort_static") if "error" not in result[k]]
    out = subprocess.run([sys.executable, os.path.join(HERE, "ort_latency.py"), feeds] + [paths[k] for k in keys],
                         capture_output=True, text=True, check=True)
    for key, ms in zip(keys, json.loads(out.stdout)):
        result[key]["ort_ms"] = round(ms, 3)
    result["uptime"] = os.getloadavg()
    return result


def weight_only(width, folder):
    import torch
    from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup
    from torchao.utils import unwrap_tensor_subclass

    import tonnx

    def stack():
        torch.manual_seed(0)
        layers = [torch.nn.Linear(width, width, bias=False) for _ in range(4)]
        return torch.nn.Sequential(*layers).eval()

    x = torch.randn(1, width)
    configs = {"int8": Int8WeightOnlyConfig(), "int4_g32": IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32))}
    result = {"model": f"linear4x{width}", "weight_only": True}
    paths = {"fp32": os.path.join(folder, "fp32.onnx")}
    export("fp32", lambda p: tonnx.to_onnx(stack(), (x,), filename=p), paths["fp32"], result)
    for scheme, config in configs.items():
        model = stack()
        quantize_(model, config)
        unwrap_tensor_subclass(model)
        with torch.no_grad():
            expected = model(x).numpy()
        for exporter in ("tonnx", "torch_onnx"):
            key = f"{exporter}_{scheme}"
            paths[key] = os.path.join(folder, f"{key}.onnx")
            fn = ((lambda p, m=model: tonnx.to_onnx(m, (x,), filename=p, target_opset=21)) if exporter == "tonnx" else
                  (lambda p, m=model: torch.onnx.export(m, (x,), p, dynamo=True, external_data=False, opset_version=21)))
            if export(key, fn, paths[key], result):
                for fused in (True, False):
                    label = "max_diff" + ("" if fused else "_unfused")
                    result[key][label] = float(np.abs(run(paths[key], x, fused) - expected).max())
    feeds = os.path.join(folder, "feeds.npz")
    np.savez(feeds, x.numpy())
    keys = [k for k in paths if "error" not in result[k]]
    out = subprocess.run([sys.executable, os.path.join(HERE, "ort_latency.py"), feeds] + [paths[k] for k in keys],
                         capture_output=True, text=True, check=True)
    for key, ms in zip(keys, json.loads(out.stdout)):
        result[key]["ort_ms"] = round(ms, 4)
    result["uptime"] = os.getloadavg()
    return result


def mlp(width):
    import torch

    torch.manual_seed(0)
    layers = [torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(),
              torch.nn.Linear(width, width)]
    return torch.nn.Sequential(*layers).eval()


def pt2e_scheme(model, x, scheme):
    """PT2E with the XNNPACK symmetric per-channel config: static, dynamic, weight-only (no
    activation observers, on the Linear modules) or QAT (one SGD step, then converted)."""
    import dataclasses

    import torch
    from torchao.quantization.pt2e import move_exported_model_to_eval
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    config = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=scheme == "pt2e_dynamic",
                                               is_qat=scheme == "pt2e_qat")
    if scheme == "pt2e_weight_only":
        quantizer = XNNPACKQuantizer().set_module_type(
            torch.nn.Linear, dataclasses.replace(config, input_activation=None, output_activation=None))
    else:
        quantizer = XNNPACKQuantizer().set_global(config)
    if scheme != "pt2e_qat":
        prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
        prepared(x)
        return convert_pt2e(prepared)
    prepared = prepare_qat_pt2e(torch.export.export(model.train(), (x,)).module(), quantizer)
    optimizer = torch.optim.SGD(prepared.parameters(), lr=1e-3)
    prepared(x).square().mean().backward()
    optimizer.step()
    move_exported_model_to_eval(prepared)
    return convert_pt2e(prepared)


def torchao_scheme(model, scheme):
    import torch
    from torchao.quantization import (
        Int8DynamicActivationInt8WeightConfig,
        Int8WeightOnlyConfig,
        IntxWeightOnlyConfig,
        quantize_,
    )
    from torchao.quantization.granularity import PerGroup
    from torchao.utils import unwrap_tensor_subclass

    config = {"torchao_int8_weight_only": Int8WeightOnlyConfig(),
              "torchao_int8_dynamic": Int8DynamicActivationInt8WeightConfig(),
              "torchao_int4_g32": IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32))}[scheme]
    quantize_(model, config)
    unwrap_tensor_subclass(model)
    return model


SCHEMES = ("pt2e_static", "pt2e_dynamic", "pt2e_weight_only", "pt2e_qat", "torchao_int8_weight_only",
           "torchao_int8_dynamic", "torchao_int4_g32")


def export_schemes(width, rows, folder, schemes) -> dict:
    """Exports fp32 and every scheme with both exporters into ``folder``; the manifest."""
    import torch

    import tonnx

    torch.manual_seed(1)
    x = torch.randn(rows, width)
    manifest = {"models": {}, "export": {}}
    paths = {"fp32": os.path.join(folder, "fp32.onnx")}
    export("fp32", lambda p: tonnx.to_onnx(mlp(width), (x,), filename=p, target_opset=21), paths["fp32"],
           manifest["export"])
    expected = {"fp32": mlp(width)(x).detach().numpy()}
    for scheme in schemes:
        model = pt2e_scheme(mlp(width), x, scheme) if scheme.startswith("pt2e") else torchao_scheme(mlp(width), scheme)
        with torch.no_grad():
            want = model(x).numpy()
        for exporter in ("tonnx", "torch_onnx"):
            key = f"{scheme}/{exporter}"
            path = os.path.join(folder, f"{scheme}_{exporter}.onnx")
            fn = ((lambda p, m=model: tonnx.to_onnx(m, (x,), filename=p, target_opset=21)) if exporter == "tonnx" else
                  (lambda p, m=model: torch.onnx.export(m, (x,), p, dynamo=True, external_data=False, opset_version=21)))
            if export(key, fn, path, manifest["export"]):
                paths[key], expected[key] = path, want
    np.savez(os.path.join(folder, "feeds.npz"), x.numpy())
    np.savez(os.path.join(folder, "expected.npz"), **{k.replace("/", "__"): v for k, v in expected.items()})
    manifest["models"] = paths
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    return manifest


def measure(folder, rounds) -> dict:
    """In this interpreter's onnxruntime (only numpy and onnxruntime imported): per model,
    ops after the default optimizations, max difference fused/unfused, one-thread latency
    (ms) over ``rounds`` rounds of interleaved medians."""
    import onnxruntime as ort

    sys.path.insert(0, HERE)
    from ort_latency import turn_medians_ms, warm_sessions

    with open(os.path.join(folder, "manifest.json")) as f:
        paths = json.load(f)["models"]
    feeds = np.load(os.path.join(folder, "feeds.npz"))["arr_0"]
    expected = np.load(os.path.join(folder, "expected.npz"))
    result = {"onnxruntime": ort.__version__, "models": {}}
    for key, path in paths.items():
        row = result["models"].setdefault(key, {"MB": round(os.path.getsize(path) / 1e6, 3)})
        want = expected[key.replace("/", "__")]
        for fused in (True, False):
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            if fused:
                options.optimized_model_filepath = path + ".opt.onnx"
            else:
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            got = session.run(None, {session.get_inputs()[0].name: feeds})[0]
            row["max_diff" + ("" if fused else "_unfused")] = float(np.abs(got - want).max())
        row["ops"] = optimized_ops(path + ".opt.onnx")
    runs = warm_sessions(list(paths.values()), [feeds], threads=1)
    ms = [turn_medians_ms(runs, 3.0, max_turns=3000) for _ in range(rounds)]
    for i, key in enumerate(paths):
        values = sorted(r[i] for r in ms)
        result["models"][key]["ms"] = round(values[len(values) // 2], 4)
        result["models"][key]["ms_spread"] = [round(values[0], 4), round(values[-1], 4)]
    result["uptime"] = os.getloadavg()
    return result


def optimized_ops(path) -> dict:
    """Op counts of onnxruntime's optimized graph (read without the onnx package's checker)."""
    import onnx

    counts: dict = {}
    for node in onnx.load(path).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def schemes_bench(args):
    with tempfile.TemporaryDirectory() as folder:
        manifest = export_schemes(args.width, args.rows, folder, args.schemes or SCHEMES)
        print(json.dumps({"export": manifest["export"], "width": args.width, "rows": args.rows}), flush=True)
        for python in [sys.executable] + args.runtime:
            out = subprocess.run([python, os.path.abspath(__file__), "--measure", folder, "--rounds", str(args.rounds)],
                                 capture_output=True, text=True, check=True)
            print(out.stdout.strip(), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*", default=["resnet18", "mobilenet_v2"])
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--weight-only", action="store_true")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--schemes", nargs="*", default=None, choices=SCHEMES)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runtime", action="append", default=[])
    parser.add_argument("--measure", default=None)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.rounds)))
        return
    if args.schemes is not None:
        schemes_bench(args)
        return
    with tempfile.TemporaryDirectory() as folder:
        if args.weight_only:
            print(json.dumps(weight_only(args.width, folder)), flush=True)
            return
        for name in args.models:
            print(json.dumps(bench(name, args.size, folder)), flush=True)


if __name__ == "__main__":
    main()
