"""The builder's rewriting passes: common subexpressions and runtime-friendly peepholes.

Each test checks the graph shape the pass leaves and that onnxruntime computes the same
numbers on the rewritten graph as on the original one.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto

from tonnx.builder import GraphBuilder
from tonnx.testing import run_onnxruntime

FLOAT = TensorProto.FLOAT


def _ops(g) -> list[str]:
    return [n.op_type for n in g.nodes]


def _graph(build, shape=(2, 3, 4)):
    """A builder with input ``x`` of ``shape`` and the outputs ``build(g)`` returns."""
    g = GraphBuilder(20)
    g.make_tensor_input("x", FLOAT, shape)
    for i, out in enumerate(build(g)):
        g.make_tensor_output(g.op.Identity(out, outputs=[f"y{i}"]), FLOAT, g.get_shape(out))
    return g


def _outputs(g, x) -> list[np.ndarray]:
    return run_onnxruntime(g.to_onnx(), [x])


def _same_numbers_after(g, rewrite, x) -> None:
    before = _outputs(g, x)
    rewrite(g)
    g.remove_identity_nodes()
    g.remove_unused()
    after = _outputs(g, x)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_cse_keeps_one_node_per_distinct_computation():
    def build(g):
        axes = np.array([1], dtype=np.int64)
        a, b = g.op.Unsqueeze("x", axes), g.op.Unsqueeze("x", axes)
        c = g.op.Unsqueeze("x", np.array([0], dtype=np.int64))  # other axes: kept
        s1, s2 = g.op.Softmax("x", axis=1), g.op.Softmax("x", axis=2)  # other attribute
        t1, t2 = g.op.Transpose("x", perm=[1, 0, 2]), g.op.Transpose("x", perm=[1, 0, 2])
        return [g.op.Add(a, b), c, s1, s2, g.op.Sub(t1, t2)]

    g = _graph(build)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    before = _ops(g)
    _same_numbers_after(g, lambda g: g.eliminate_common_subexpressions(), x)
    assert before.count("Unsqueeze") == 3 and _ops(g).count("Unsqueeze") == 2
    assert _ops(g).count("Softmax") == 2 and _ops(g).count("Transpose") == 1
    # the surviving Add reads the same name twice
    add = next(n for n in g.nodes if n.op_type == "Add")
    assert add.inputs[0] == add.inputs[1]


def test_cse_chains_and_leaves_outputs_and_random_ops_alone():
    g = GraphBuilder(20)
    g.make_tensor_input("x", FLOAT, (2, 3))
    n1 = g.op.Neg(g.op.Relu("x"))
    n2 = g.op.Neg(g.op.Relu("x"))  # equal to n1 once the Relus are merged
    r1 = g.op.RandomUniformLike("x")
    r2 = g.op.RandomUniformLike("x")
    g.make_tensor_output(g.op.Add(n1, n2), FLOAT, (2, 3))
    g.make_tensor_output(g.op.Add(r1, r2), FLOAT, (2, 3))
    g.make_tensor_output(g.op.Abs("x", outputs=["o1"]), FLOAT, (2, 3))
    g.make_tensor_output(g.op.Abs("x", outputs=["o2"]), FLOAT, (2, 3))
    assert g.eliminate_common_subexpressions() == 2
    assert _ops(g).count("Relu") == 1 and _ops(g).count("Neg") == 1
    assert _ops(g).count("RandomUniformLike") == 2
    assert _ops(g).count("Abs") == 2  # both are graph outputs


def test_mul_by_reciprocal_becomes_div():
    def build(g):
        rms = g.op.Sqrt(g.op.Add(g.op.ReduceMean(g.op.Pow("x", 2.0), np.array([-1])), 1e-6))
        return [g.op.Mul("x", g.op.Reciprocal(rms))]

    g = _graph(build)
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(1e-6))
    assert g.rewrite_peepholes() == 1
    g.remove_identity_nodes()
    g.remove_unused()
    assert _ops(g) == ["Pow", "ReduceMean", "Add", "Sqrt", "Div"]
    np.testing.assert_allclose(_outputs(g, x)[0], expected, rtol=1e-6)


def test_reciprocal_read_twice_is_kept():
    def build(g):
        r = g.op.Reciprocal("x")
        return [g.op.Mul("x", r), g.op.Neg(r)]

    g = _graph(build)
    assert g.rewrite_peepholes() == 0
    assert "Reciprocal" in _ops(g) and "Div" not in _ops(g)


def test_transposes_compose_and_cancel():
    def build(g):
        once = g.op.Transpose(g.op.Transpose("x", perm=[0, 2, 1]), perm=[1, 0, 2])
        cancel = g.op.Transpose(g.op.Transpose("x", perm=[2, 0, 1]), perm=[1, 2, 0])
        return [once, g.op.Relu(cancel)]

    g = _graph(build)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    _same_numbers_after(g, lambda g: g.rewrite_peepholes(), x)
    assert _ops(g) == ["Transpose", "Relu"]
    np.testing.assert_array_equal(_outputs(g, x)[0], x.transpose(0, 2, 1).transpose(1, 0, 2))


def test_zero_biases_are_dropped_but_not_broadcasting_ones():
    def build(g):
        w = np.arange(12, dtype=np.float32).reshape(4, 3)
        gemm = g.op.Gemm(g.op.Reshape("x", np.array([6, 4])), w, np.zeros(3, dtype=np.float32))
        same = g.op.Add("x", np.zeros((1, 4), dtype=np.float32))
        wider = g.op.Add("x", np.zeros((5, 1, 1, 1), dtype=np.float32))  # broadcasts x up
        biased = g.op.Add("x", np.ones(4, dtype=np.float32))
        return [gemm, same, wider, biased]

    g = _graph(build)
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    _same_numbers_after(g, lambda g: g.rewrite_peepholes(), x)
    gemm = next(n for n in g.nodes if n.op_type == "Gemm")
    assert len(gemm.inputs) == 2
    assert _ops(g).count("Add") == 2  # the broadcasting one and the real bias


def test_batchnorm_after_conv_is_folded_into_the_conv():
    rng = np.random.default_rng(3)

    def build(g):
        w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        conv = g.op.Conv("x", w, rng.standard_normal(4).astype(np.float32), pads=[1, 1, 1, 1])
        stats = [rng.standard_normal(4).astype(np.float32) for _ in range(3)]
        var = rng.uniform(0.5, 2.0, 4).astype(np.float32)
        return [g.op.BatchNormalization(conv, *stats, var, epsilon=1e-3)]

    g = _graph(build, shape=(2, 3, 5, 5))
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    before = _outputs(g, x)[0]
    assert g.rewrite_peepholes() == 1
    g.remove_identity_nodes()
    g.remove_unused()
    assert _ops(g) == ["Conv"]
    np.testing.assert_allclose(_outputs(g, x)[0], before, rtol=1e-5, atol=1e-5)


@st.composite
def _two_unsqueezes(draw):
    """(input rank, first axes, second axes, opset): any valid axes, negative ones too."""
    rank = draw(st.integers(0, 3))
    axes = []
    for added in (draw(st.integers(1, 3)), draw(st.integers(1, 3))):
        out = rank + sum(len(a) for a in axes) + added
        chosen = draw(st.lists(st.integers(0, out - 1), min_size=added, max_size=added, unique=True))
        axes.append([a - out if draw(st.booleans()) else a for a in chosen])
    return rank, axes[0], axes[1], draw(st.sampled_from([11, 20]))


@given(_two_unsqueezes())
def test_unsqueezes_compose_into_one(case):
    rank, first, second, opset = case
    shape = (2, 3, 4)[:rank]
    g = GraphBuilder(opset)
    g.make_tensor_input("x", FLOAT, shape)
    if opset >= 13:
        out = g.op.Unsqueeze(g.op.Unsqueeze("x", np.array(first)), np.array(second))
    else:
        out = g.op.Unsqueeze(g.op.Unsqueeze("x", axes=first), axes=second)
    g.make_tensor_output(g.op.Identity(out, outputs=["y"]), FLOAT, g.get_shape(out))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = np.expand_dims(np.expand_dims(x, first), second)
    assert g.rewrite_peepholes() == 1
    g.remove_identity_nodes()
    g.remove_unused()
    assert _ops(g) == ["Unsqueeze"]
    got = _outputs(g, x)[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_and_with_true_is_dropped_unless_it_broadcasts():
    g = GraphBuilder(20)
    g.make_tensor_input("b", TensorProto.BOOL, (2, 3))
    kept = g.op.And("b", np.array(True))
    wider = g.op.And("b", np.ones((4, 1, 1), dtype=np.bool_))  # broadcasts b up
    masked = g.op.And("b", np.array([True, False, True]))
    for i, out in enumerate((kept, wider, masked)):
        g.make_tensor_output(g.op.Identity(out, outputs=[f"y{i}"]), TensorProto.BOOL, g.get_shape(out))
    b = np.array([[True, False, True], [True, True, False]])
    before = run_onnxruntime(g.to_onnx(), [b])
    assert g.rewrite_peepholes() == 1
    g.remove_identity_nodes()
    g.remove_unused()
    assert _ops(g).count("And") == 2  # the broadcasting one and the real mask
    for want, got in zip(before, run_onnxruntime(g.to_onnx(), [b])):
        np.testing.assert_array_equal(got, want)


def test_reduction_axes_of_known_rank_are_counted_from_the_front():
    """onnxruntime 1.31.1 reduces an empty tensor over a negative axis to the wrong shape:
    axes whose input rank is known are rewritten from the front; unknown ranks are left."""
    from tonnx.builder._reduce_axes import count_reduction_axes_from_front

    def build(g):
        return [
            g.op.ReduceMax("x", np.array([-1, 0]), keepdims=1),
            g.op.Cast(g.op.ArgMin("x", axis=-1, keepdims=0), to=FLOAT),
            g.op.ReduceSum(g.op.Exp("x"), np.array([-1]), keepdims=0),  # Exp's rank: unknown
        ]

    g = _graph(build, shape=(2, 0, 3))
    x = np.zeros((2, 0, 3), dtype=np.float32)
    assert count_reduction_axes_from_front(g) == 2
    axes = {n.op_type: n for n in g.nodes}
    assert g.get_constant(axes["ReduceMax"].inputs[1]).tolist() == [2, 0]
    assert axes["ArgMin"].attributes["axis"] == 2
    assert g.get_constant(axes["ReduceSum"].inputs[1]).tolist() == [-1]  # converters' part
    assert [o.shape for o in _outputs(g, x)[:2]] == [(1, 0, 1), (2, 0)]
