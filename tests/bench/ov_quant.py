"""Which quantized exports OpenVINO runs (compile + infer), with the first line of any error,
and the max difference from the quantized PyTorch model (docs/quantization.md).

    /work/venvbench/bin/python tests/bench/ov_quant.py
"""
import os, sys, json, numpy as np, torch
import tonnx
import openvino as ov
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e
from torchao.quantization.pt2e import move_exported_model_to_eval, disable_observer
from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config
from torchao.quantization import Int8DynamicActivationInt8WeightConfig, Int8WeightOnlyConfig, IntxWeightOnlyConfig, quantize_
from torchao.quantization.granularity import PerGroup
from torchao.utils import unwrap_tensor_subclass
torch.manual_seed(0)
core = ov.Core()
def mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64)).eval()
class ConvLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3); self.bn = torch.nn.BatchNorm2d(8); self.fc = torch.nn.Linear(8 * 6 * 6, 10)
    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))
def pt2e(model, x, dynamic=False):
    p = prepare_pt2e(torch.export.export(model, (x,)).module(), XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic)))
    p(x); return convert_pt2e(p)
def qat_prepared(x):
    m = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8)).train()
    p = prepare_qat_pt2e(torch.export.export(m, (x,)).module(), XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True, is_qat=True)))
    p(x); move_exported_model_to_eval(p); p.apply(disable_observer); return p
def ao(cfg):
    m = mlp(); quantize_(m, cfg); unwrap_tensor_subclass(m); return m
x2 = torch.randn(3, 64); x4 = torch.randn(2, 3, 8, 8)
cases = {
  "pt2e_static_conv_linear": lambda: (pt2e(ConvLinear().eval(), x4), x4, 20),
  "pt2e_dynamic_mlp": lambda: (pt2e(mlp(), x2, True), x2, 20),
  "qat_prepared_mlp": lambda: (qat_prepared(x2), x2, 20),
  "torchao_int8_weight_only": lambda: (ao(Int8WeightOnlyConfig()), x2, 21),
  "torchao_int4_weight_only_g32": lambda: (ao(IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32))), x2, 21),
  "torchao_int8_dynamic": lambda: (ao(Int8DynamicActivationInt8WeightConfig()), x2, 21),
}
for name, make in cases.items():
    model, x, opset = make()
    with torch.no_grad():
        expected = model(x).numpy()
    onx = tonnx.to_onnx(model, (x,), target_opset=opset)
    import onnx, tempfile
    path = os.path.join(tempfile.mkdtemp(), f"{name}.onnx"); onnx.save(onx, path)
    try:
        compiled = core.compile_model(core.read_model(path), "CPU")
        got = compiled([x.numpy()])[0]
        r = {"runs": True, "max_diff": float(np.abs(got - expected).max()), "max_abs_out": float(np.abs(expected).max())}
    except Exception as e:
        r = {"runs": False, "error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"}
    print(json.dumps({"model": name, "opset": opset, **r}), flush=True)
print("openvino", ov.__version__)
