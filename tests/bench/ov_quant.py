"""Which quantized exports OpenVINO runs (compile + infer), with the first line of any error,
and the max difference from the quantized PyTorch model (docs/quantization.md).

    /work/venvbench/bin/python tests/bench/ov_quant.py
"""
import json
import os
import tempfile

import numpy as np
import onnx
import openvino as ov
import torch
from bench_quant import pt2e_scheme  # tests/bench, beside this script
from torchao.quantization import (
    Int8DynamicActivationInt8WeightConfig,
    Int8WeightOnlyConfig,
    IntxWeightOnlyConfig,
    quantize_,
)
from torchao.quantization.granularity import PerGroup
from torchao.quantization.pt2e import disable_observer, move_exported_model_to_eval
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e
from torchao.testing.pt2e._xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.utils import unwrap_tensor_subclass

import tonnx


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64)).eval()


class ConvLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


def pt2e(model, x, dynamic=False):
    config = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic)
    prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), XNNPACKQuantizer().set_global(config))
    prepared(x)  # calibration
    return convert_pt2e(prepared)


def qat_prepared(x):
    model = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8)).train()
    config = get_symmetric_quantization_config(is_per_channel=True, is_qat=True)
    prepared = prepare_qat_pt2e(torch.export.export(model, (x,)).module(), XNNPACKQuantizer().set_global(config))
    prepared(x)
    move_exported_model_to_eval(prepared)
    prepared.apply(disable_observer)
    return prepared


def ao(config):
    model = mlp()
    quantize_(model, config)
    unwrap_tensor_subclass(model)
    return model


def run_in_openvino(core, name, model, x, opset) -> dict:
    """Export with tonnx, compile and run in OpenVINO's CPU plugin; the error's first line if not."""
    with torch.no_grad():
        expected = model(x).numpy()
    onx = tonnx.to_onnx(model, (x,), target_opset=opset)
    path = os.path.join(tempfile.mkdtemp(), f"{name}.onnx")
    onnx.save(onx, path)
    try:
        compiled = core.compile_model(core.read_model(path), "CPU")
        got = compiled([x.numpy()])[0]
        return {"runs": True, "max_diff": float(np.abs(got - expected).max()),
                "max_abs_out": float(np.abs(expected).max())}
    except Exception as e:  # what OpenVINO refuses is the result reported
        return {"runs": False, "error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"}


def main() -> None:
    torch.manual_seed(0)
    core = ov.Core()
    x2, x4 = torch.randn(3, 64), torch.randn(2, 3, 8, 8)
    cases = {  # name -> (model, input, opset)
        "pt2e_static_conv_linear": lambda: (pt2e(ConvLinear().eval(), x4), x4, 20),
        "pt2e_dynamic_mlp": lambda: (pt2e(mlp(), x2, True), x2, 20),
        "pt2e_dynamic_mlp_blocked_weights": lambda: (pt2e(mlp(), x2, True), x2, 21),
        "pt2e_weight_only_mlp": lambda: (pt2e_scheme(mlp(), x2, "pt2e_weight_only"), x2, 21),
        "qat_prepared_mlp": lambda: (qat_prepared(x2), x2, 20),
        "torchao_int8_weight_only": lambda: (ao(Int8WeightOnlyConfig()), x2, 21),
        "torchao_int4_weight_only_g32": lambda: (
            ao(IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32))), x2, 21),
        "torchao_int8_dynamic": lambda: (ao(Int8DynamicActivationInt8WeightConfig()), x2, 21),
    }
    for name, make in cases.items():
        model, x, opset = make()
        result = run_in_openvino(core, name, model, x, opset)
        print(json.dumps({"model": name, "opset": opset, **result}), flush=True)
    print("openvino", ov.__version__)


if __name__ == "__main__":
    main()
