"""Derived initializers (builder/_derived.py) and rewrite stages (RewriteRule.stage): a
rule may build a weight from other weights, even those of a model on ``meta`` whose
weights are streamed from safetensors while the file is written."""

from __future__ import annotations

import numpy as np
import onnx
import torch
from rule_packs import RulePack, fresh_manager  # noqa: F401 (fixture, autouse)

import tonnx
from tonnx.converters import RewriteRule
from tonnx.testing import run_onnxruntime


class TwoLinears(torch.nn.Module):
    """Two projections of one input, as attention's query and key."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 5, bias=False)
        self.b = torch.nn.Linear(8, 3, bias=False)

    def forward(self, x):
        return self.a(x) + self.b(x).sum(-1, keepdim=True)



def _linear(ctx, name):
    """(x, W) when ``name`` is ``Gemm(x, W, transB=1)`` without bias (a 2-D nn.Linear)."""
    gemm = ctx.producer(name)
    if gemm is None or gemm.op_type != "Gemm" or len(gemm.inputs) != 2:
        return None
    if gemm.attributes.get("transB") != 1 or gemm.attributes.get("transA", 0):
        return None
    return gemm.inputs[0], gemm.inputs[1]


def _pack_projections(ctx, node):
    """``Add(x Wa^T, ReduceSum(x Wb^T))`` -> one ``Gemm(x, [Wa; Wb], transB=1)`` split
    again: the packed weight is derived from the two."""
    red = ctx.producer(node.inputs[1])
    a = _linear(ctx, node.inputs[0])
    b = red and red.op_type == "ReduceSum" and _linear(ctx, red.inputs[0])
    if not a or not b or a[0] != b[0]:
        return None
    g = ctx.g
    packed = g.make_derived_initializer(
        [a[1], b[1]], lambda wa, wb: np.concatenate([wa, wb]), (8, 8), g.constants[a[1]].dtype)
    gemm = ctx.node("Gemm", [a[0], packed], 1, transB=1)
    split = ctx.node("Split", [gemm.outputs[0], g.make_initializer("", np.array([5, 3]))], 2, axis=-1)
    total = ctx.node("ReduceSum", [split.outputs[1], red.inputs[1]], 1, keepdims=1)
    return [gemm, split, total, ctx.node("Add", [split.outputs[0], total.outputs[0]], node.outputs)]


def _export(model, tmp_path, device="cpu", **kwargs):
    rules = [RewriteRule("pack", "Add", _pack_projections)]
    dispatcher = tonnx.Dispatcher(extra_packs=[RulePack(rules)])
    path = tmp_path / "m.onnx"
    x = torch.randn(2, 8, device=device)
    tonnx.to_onnx(model, (x,), dispatcher=dispatcher, filename=path, **kwargs)
    return onnx.load(path)


def test_weights_in_memory_are_derived_at_once(tmp_path):
    torch.manual_seed(0)
    model = TwoLinears().eval()
    onx = _export(model, tmp_path)
    assert [n.op_type for n in onx.graph.node].count("Gemm") == 1
    x = torch.randn(2, 8)
    (got,) = run_onnxruntime(onx, (x,))
    torch.testing.assert_close(torch.from_numpy(got), model(x), atol=1e-6, rtol=1e-6)


def test_streamed_weights_are_derived_as_the_file_is_written(tmp_path):
    from safetensors.torch import save_file

    torch.manual_seed(0)
    model = TwoLinears().eval()
    save_file(model.state_dict(), str(tmp_path / "w.safetensors"))
    with torch.device("meta"):
        on_meta = TwoLinears().eval()
    onx = _export(on_meta, tmp_path, "meta", weights=str(tmp_path / "w.safetensors"), external_data=True)
    assert [n.op_type for n in onx.graph.node].count("Gemm") == 1
    assert {i.name for i in onx.graph.initializer}.isdisjoint({"a.weight", "b.weight"})
    x = torch.randn(2, 8)
    (got,) = run_onnxruntime(onx, (x,))
    torch.testing.assert_close(torch.from_numpy(got), model(x), atol=1e-6, rtol=1e-6)


def test_a_later_stage_sees_what_the_fusions_made():
    """A stage-1 rule on Gemm sees the packed Gemm (one), not the two projections that a
    single sweep would have offered it first, and which weights it was derived from."""
    seen = []

    def record(ctx, node):
        weight = node.inputs[1]
        seen.append((tuple(ctx.g.get_shape(weight) or ()), ctx.g.derived_from.get(weight)))
        return None

    rules = [RewriteRule("pack", "Add", _pack_projections),
             RewriteRule("record", "Gemm", record, stage=1)]
    dispatcher = tonnx.Dispatcher(extra_packs=[RulePack(rules)])
    tonnx.to_onnx(TwoLinears().eval(), (torch.randn(2, 8),), dispatcher=dispatcher)
    assert seen == [((8, 8), ("a.weight", "b.weight"))]


class LinearsOn3D(torch.nn.Module):
    """Linears on a 3-D input (MatMul(x, Transpose(W))), one reading the embedding's table."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(11, 8)
        self.up = torch.nn.Linear(8, 6, bias=False)
        self.down = torch.nn.Linear(6, 8, bias=False)
        self.head = torch.nn.Linear(8, 11, bias=False)
        self.head.weight = self.embed.weight  # tied: read by Gather and by the MatMul

    def forward(self, ids):
        return self.head(self.down(torch.relu(self.up(self.embed(ids)))))


def test_streamed_weights_are_stored_as_the_matmuls_read_them(tmp_path):
    """A streamed Linear weight is written transposed (derived at write time), so onnxruntime
    does not transpose it at every load; a tied table keeps one copy and its Transpose."""
    from safetensors.torch import save_file

    torch.manual_seed(0)
    model = LinearsOn3D().eval()
    save_file({k: v.clone() for k, v in model.state_dict().items()}, str(tmp_path / "w.safetensors"))
    with torch.device("meta"):
        on_meta = LinearsOn3D().eval()
    ids = torch.tensor([[1, 4, 9], [0, 2, 10]])
    path = tmp_path / "m.onnx"
    tonnx.to_onnx(on_meta, (ids,), filename=path, weights=str(tmp_path / "w.safetensors"),
                  external_data=True)
    onx = onnx.load(path)
    initializers = {i.name: tuple(i.dims) for i in onx.graph.initializer}
    assert initializers["up.weight.transposed"] == (8, 6)
    assert initializers["down.weight.transposed"] == (6, 8)
    assert "up.weight" not in initializers and "down.weight" not in initializers
    transposed = [n.input[0] for n in onx.graph.node if n.op_type == "Transpose"]
    assert len(transposed) == 1 and transposed[0] in ("embed.weight", "head.weight")
    (got,) = run_onnxruntime(onx, (ids,))
    torch.testing.assert_close(torch.from_numpy(got), model(ids), atol=1e-6, rtol=1e-6)
