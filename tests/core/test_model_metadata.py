"""pkg.tonnx.* metadata: version, packs used, graph signature, original parameter names."""

from __future__ import annotations

import json

import torch

import tonnx


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 4)
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, x, *, bias):
        self.steps.add_(1)  # a buffer mutation: an output kind of its own
        return self.linear(x) + bias, x.sum()


def test_metadata_describes_origin_and_signature():
    onx = tonnx.to_onnx(Net(), (torch.rand(2, 3),), {"bias": torch.rand(4)},
                        input_names=["x", "bias"], output_names=["y", "total"])
    meta = {p.key: p.value for p in onx.metadata_props}
    assert meta["pkg.tonnx.version"] == tonnx.__version__
    assert meta["pkg.tonnx.packs_used"].startswith("aten ")
    assert "nodes)" in meta["pkg.tonnx.packs_used"]
    signature = json.loads(meta["pkg.tonnx.graph_signature"])
    kinds = [(i["kind"], i.get("target"), i.get("onnx")) for i in signature["inputs"]]
    assert ("PARAMETER", "linear.weight", "linear.weight") in kinds
    assert ("PARAMETER", "linear.bias", "linear.bias") in kinds
    assert [k[2] for k in kinds if k[0] == "USER_INPUT"] == ["x", "bias"]
    outputs = [(o["kind"], o.get("onnx")) for o in signature["outputs"]]
    assert ("USER_OUTPUT", "y") in outputs and ("USER_OUTPUT", "total") in outputs
    assert ("BUFFER_MUTATION", "steps.updated") in outputs  # its new value, not dropped
    parameters = json.loads(meta["pkg.tonnx.parameters"])
    assert parameters["linear.weight"] == "linear.weight"
    assert set(parameters) <= {i.name for i in onx.graph.initializer}
