"""``invoke_subgraph`` (``torch.compiler.nested_compile_region``) -> one ONNX local function
per region, called once per use; checked against torch eager in onnxruntime.

torch.export keeps the region only when it traces with dynamo (``strict=True``); the
non-strict export inlines every call.
"""

from __future__ import annotations

import onnx
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import assert_close, run_onnxruntime

F = torch.nn.functional
DOMAIN = "pkg.tonnx.subgraphs"


class Layer(torch.nn.Module):
    """A transformer layer: attention and MLP with their norms and residuals."""

    def __init__(self, dim: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.out = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.up, self.down = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class MarkedLayer(Layer):
    @torch.compiler.nested_compile_region
    def forward(self, x):
        return super().forward(x)


class Stack(torch.nn.Module):
    def __init__(self, layer: type, n: int = 8):
        super().__init__()
        self.layers = torch.nn.ModuleList([layer() for _ in range(n)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


DYNAMIC = ({0: "batch", 1: "seq"},)


def export(model, x):
    return tonnx.to_onnx(model, (x,), dynamic_shapes=DYNAMIC, strict=True)


def check(model, onx, inputs) -> None:
    for x in inputs:
        with torch.no_grad():
            expected = model(x)
        (got,) = run_onnxruntime(onx, [x])
        assert_close(expected, got, atol=1e-4, rtol=1e-4)


def graph_bytes(onx) -> int:
    """Bytes of the graph and the local functions, without the weights' data."""
    graph = onnx.GraphProto()
    graph.CopyFrom(onx.graph)
    for init in graph.initializer:
        init.ClearField("raw_data")
    return graph.ByteSize() + sum(f.ByteSize() for f in onx.functions)


def calls(onx) -> list:
    return [n for n in onx.graph.node if n.domain == DOMAIN]


@given(
    batch=st.integers(2, 3),
    seq=st.integers(2, 6),
    others=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 9)), min_size=1, max_size=3),
)
def test_marked_layers_share_one_function(batch, seq, others):
    torch.manual_seed(0)
    model = Stack(MarkedLayer).eval()
    onx = export(model, torch.rand(batch, seq, 16))
    assert [(f.domain, f.name) for f in onx.functions] == [(DOMAIN, "repeated_subgraph0")]
    # torch.export inlines the region's first call (its own trace), and calls it after
    assert len(calls(onx)) >= 6
    assert {n.op_type for n in calls(onx)} == {"repeated_subgraph0"}
    check(model, onx, [torch.rand(b, s, 16) for b, s in others])


def test_marked_model_holds_one_copy_of_the_layer():
    torch.manual_seed(0)
    x = torch.rand(2, 5, 16)
    marked, plain = Stack(MarkedLayer).eval(), Stack(Layer).eval()
    plain.load_state_dict(marked.state_dict())
    onx_marked, onx_plain = export(marked, x), export(plain, x)
    assert not onx_plain.functions
    check(marked, onx_marked, [x, torch.rand(3, 7, 16)])
    # 8 layers inlined against 1 inlined + 1 function + 7 call nodes
    assert graph_bytes(onx_marked) < 0.4 * graph_bytes(onx_plain)


class Gated(torch.nn.Module):
    """A region holding a torch.cond: an If in the function's body."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    @torch.compiler.nested_compile_region
    def forward(self, x):
        y = self.lin(x)
        return torch.cond(y.sum() > 0, lambda a: a.relu(), lambda a: a.sin(), (y,))


@given(signs=st.lists(st.sampled_from([-1.0, 1.0]), min_size=1, max_size=3))
def test_cond_inside_a_region(signs):
    torch.manual_seed(0)
    model = Stack(Gated, n=3).eval()
    onx = tonnx.to_onnx(model, (torch.rand(2, 4),), strict=True)
    (function,) = onx.functions
    assert "If" in [n.op_type for n in function.node]
    check(model, onx, [torch.rand(2, 4) * s for s in signs])


def test_regions_with_modules_as_functions():
    """export_modules_as_functions folds the main graph's nodes; the regions' functions
    stay and are called from the module functions."""
    torch.manual_seed(0)
    model = Stack(MarkedLayer, n=3).eval()
    x = torch.rand(2, 5, 16)
    onx = tonnx.to_onnx(model, (x,), strict=True, export_modules_as_functions={MarkedLayer})
    assert DOMAIN in {f.domain for f in onx.functions}
    check(model, onx, [x])


def test_function_body_constants_are_constant_nodes():
    """A FunctionProto has no initializers: the body's constants are Constant nodes."""
    g = tonnx.GraphBuilder(18)
    body = g.make_function("my.domain", "add_two")
    x = body.make_tensor_input("x", onnx.TensorProto.FLOAT, ("n",))
    body.make_tensor_output(body.op.Add(x, body.make_initializer("", [2.0, 2.0])))
    a = g.make_tensor_input("a", onnx.TensorProto.FLOAT, (2,))
    out = g.make_node("add_two", [a], 1, domain="my.domain")
    g.make_tensor_output(out, onnx.TensorProto.FLOAT, (2,))
    onx = g.to_onnx()
    onnx.checker.check_model(onx, full_check=True)
    (function,) = onx.functions
    assert function.node[0].op_type == "Constant"
    (got,) = run_onnxruntime(onx, [torch.tensor([1.0, -1.0])])
    assert got.tolist() == [3.0, 1.0]
