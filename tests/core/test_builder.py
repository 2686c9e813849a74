"""GraphBuilder: names, types, constants, folding, passes, serialization."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx.reference import ReferenceEvaluator

from tonnx import TonnxError
from tonnx.builder import GraphBuilder


def _run(model, **feeds):
    return ReferenceEvaluator(model).run(None, feeds)


def test_matmul_add_with_short_form_constants():
    g = GraphBuilder(18)
    g.make_tensor_input("X", TensorProto.FLOAT, ("a", 3))
    mm = g.op.MatMul("X", np.array([[0.4], [0.5], [0.6]], dtype=np.float32))
    out = g.op.Add(mm, 1.5, outputs=["Y"])
    g.make_tensor_output(out, TensorProto.FLOAT, ("a", 1))
    model = g.to_onnx()
    onnx.checker.check_model(model)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = _run(model, X=x)
    np.testing.assert_allclose(y, x @ np.array([[0.4], [0.5], [0.6]], dtype=np.float32) + 1.5)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "a"
    # the python scalar took the type of the first tensor input
    assert g.get_type(model.graph.node[1].input[1]) == TensorProto.FLOAT


def test_unique_names_and_node_names():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (2,))
    a = g.op.Relu("x")
    b = g.op.Relu("x")
    assert a != b
    assert len({n.name for n in g.nodes}) == 2
    with pytest.raises(TonnxError, match="defined twice"):
        g.make_tensor_input("x", TensorProto.FLOAT, (2,))
    # a name from unique_name can name a new input (a Scan or Loop body's state)
    sub = g.make_subgraph()
    state = sub.make_tensor_input(g.unique_name("state"), TensorProto.FLOAT, (2,))
    assert state == "state" and g.unique_name("state") != "state"


def test_unknown_input_error_carries_debug_message():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (2,))
    g.op.Relu("x")
    with pytest.raises(TonnxError) as info:
        g.op.Add("x", "bias")
    message = str(info.value)
    assert "'bias'" in message and "--DEBUG--" in message and "Relu(x)" in message


def test_typo_in_op_name_fails_at_once():
    g = GraphBuilder(18)
    with pytest.raises(AttributeError, match="MatMull"):
        g.op.MatMull  # noqa: B018


def test_small_initializers_are_deduplicated_large_ones_not():
    g = GraphBuilder(18)
    a = g.make_initializer("", np.array([1, 2], dtype=np.int64))
    b = g.make_initializer("", np.array([1, 2], dtype=np.int64))
    c = g.make_initializer("", np.array([1, 2], dtype=np.int32))
    assert a == b and a != c
    big = np.zeros(1000, dtype=np.float32)
    assert g.make_initializer("", big) != g.make_initializer("", big.copy())


def test_torch_weights_are_kept_until_serialization_and_copied_once():
    torch = pytest.importorskip("torch")
    g = GraphBuilder(18)
    w = torch.randn(4, 3)
    name = g.make_initializer("fc.weight", w)
    assert g.constants[name] is w  # no copy while building
    g.make_tensor_input("x", TensorProto.FLOAT, (2, 3))
    g.make_tensor_output(g.op.MatMul("x", g.op.Transpose(name, perm=[1, 0])))
    g.optimize()
    model = g.to_onnx()
    (init,) = model.graph.initializer
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(init), w.numpy().T)
    assert [n.op_type for n in model.graph.node] == ["MatMul"]  # transpose folded


def test_bfloat16_initializer_roundtrip():
    torch = pytest.importorskip("torch")
    g = GraphBuilder(18)
    w = torch.randn(3).to(torch.bfloat16)
    name = g.make_initializer("w", w)
    assert g.get_type(name) == TensorProto.BFLOAT16
    g.make_tensor_output(name)
    model = g.to_onnx()
    back = onnx.numpy_helper.to_array(model.graph.initializer[0])
    np.testing.assert_array_equal(back.astype(np.float32), w.float().numpy())


def test_constant_inputs_are_folded_when_cheap():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, ("n", 6))
    shape = g.op.Concat(np.array([2], dtype=np.int64), np.array([3], dtype=np.int64), axis=0)
    assert g.is_constant(shape)
    np.testing.assert_array_equal(g.get_constant(shape), [2, 3])
    assert g.nodes == []
    # a float Add is not folded: the runtime might round differently
    g.op.Add(np.array([1.0], dtype=np.float32), np.array([2.0], dtype=np.float32))
    assert [n.op_type for n in g.nodes] == ["Add"]


def test_shape_of_static_tensor_is_a_constant():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (2, 5))
    s = g.op.Shape("x")
    np.testing.assert_array_equal(g.get_constant(s), [2, 5])
    g.make_tensor_input("y", TensorProto.FLOAT, ("n", 5))
    assert not g.is_constant(g.op.Shape("y"))


def test_remove_identity_nodes_keeps_output_names():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (2,))
    r = g.op.Relu("x")
    i1 = g.op.Identity(r)
    out = g.op.Identity(i1, outputs=["y"])
    g.make_tensor_output(out, TensorProto.FLOAT, (2,))
    assert g.remove_identity_nodes() == 2
    model = g.to_onnx()
    assert [n.op_type for n in model.graph.node] == ["Relu"]
    assert model.graph.node[0].output[0] == "y" == model.graph.output[0].name
    (y,) = _run(model, x=np.array([-1, 2], dtype=np.float32))
    np.testing.assert_array_equal(y, [0, 2])


def test_identity_between_input_and_output_is_kept():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (2,))
    g.make_tensor_output(g.op.Identity("x", outputs=["y"]), TensorProto.FLOAT, (2,))
    assert g.remove_identity_nodes() == 0


def test_remove_unused_nodes_and_initializers():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (2,))
    g.op.Add("x", np.array([1.0, 2.0], dtype=np.float32))  # unused
    used = g.op.Neg("x")
    g.make_tensor_output(used, TensorProto.FLOAT, (2,))
    assert g.remove_unused() == 2
    assert [n.op_type for n in g.nodes] == ["Neg"] and g.constants == {}


def test_multi_opset_and_custom_domain():
    g = GraphBuilder({"": 23, "com.microsoft": 1})
    assert g.main_opset == 23
    g.make_tensor_input("x", TensorProto.FLOAT, (2, 4))
    y = g.make_node("FastGelu", ["x"], domain="com.microsoft")
    g.make_tensor_output(y, TensorProto.FLOAT, (2, 4))
    model = g.to_onnx()
    assert {o.domain: o.version for o in model.opset_import} == {"": 23, "com.microsoft": 1}
    with pytest.raises(TonnxError, match="add_domain"):
        g.make_node("Foo", ["x"], domain="my.company")


def test_make_nodes_inlines_a_function():
    inner = onnx.parser.parse_function(
        """
        <domain: "local", opset_import: ["": 18]>
        double_relu (x) => (y) {
            r = Relu(x)
            y = Add(r, r)
        }
        """
    )
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (3,))
    g.make_nodes(inner, ["x"], ["out"], prefix="dr")
    g.make_tensor_output("out", TensorProto.FLOAT, (3,))
    (y,) = _run(g.to_onnx(), x=np.array([-1, 0, 2], dtype=np.float32))
    np.testing.assert_array_equal(y, [0, 0, 4])
    assert [n.op_type for n in g.nodes] == ["Relu", "Add"]


def test_external_data_writer(tmp_path):
    from tonnx.pipeline.write import ExternalDataWriter, write_model

    g = GraphBuilder(18)
    w = g.make_initializer("w", np.arange(1000, dtype=np.float32))
    g.make_tensor_input("x", TensorProto.FLOAT, (1000,))
    g.make_tensor_output(g.op.Add("x", w), TensorProto.FLOAT, (1000,))
    writer = ExternalDataWriter(str(tmp_path / "m.onnx.data"), "m.onnx.data")
    model = g.to_onnx(external_data=writer)
    writer.close()
    assert model.graph.initializer[0].data_location == TensorProto.EXTERNAL
    write_model(model, str(tmp_path / "m.onnx"))
    loaded = onnx.load(str(tmp_path / "m.onnx"))
    np.testing.assert_array_equal(
        onnx.numpy_helper.to_array(loaded.graph.initializer[0]), np.arange(1000, dtype=np.float32)
    )


def test_node_names_stay_unique_when_prefixes_look_like_generated_names():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (2,))
    for prefix in ["index", "index", "index_1", "index_1"]:
        g.node_prefix = prefix
        g.op.Relu("x")
    names = [n.name for n in g.nodes]
    assert len(set(names)) == 4, names


def test_trailing_omitted_inputs_are_dropped_and_stats_typed():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT16, (2, 4))
    scale = g.make_initializer("", np.ones(4, dtype=np.float16))
    y, mean, inv = g.op.LayerNormalization("x", scale, None, axis=-1, outputs=3)
    assert g.nodes[-1].inputs == ["x", scale]
    assert g.get_type(y) == TensorProto.FLOAT16
    assert g.get_type(mean) == g.get_type(inv) == TensorProto.FLOAT


def test_integer_and_boolean_mask_chains_fold_floats_do_not():
    g = GraphBuilder(18)
    g.make_tensor_input("x", TensorProto.FLOAT, (4, 4))
    positions = g.op.Range(np.array(0), np.array(4), np.array(1))
    rows = g.op.Unsqueeze(positions, np.array([1]))
    cols = g.op.Unsqueeze(positions, np.array([0]))
    causal = g.op.LessOrEqual(cols, rows)
    mask = g.op.Where(causal, np.array(0.0, dtype=np.float32), np.array(-np.inf, dtype=np.float32))
    assert g.nodes == [] and g.is_constant(mask)
    np.testing.assert_array_equal(g.get_constant(mask), np.where(np.tril(np.ones((4, 4))) > 0, 0, -np.inf))
    g.op.Cos(mask)  # float math is left to the runtime
    assert [n.op_type for n in g.nodes] == ["Cos"]
    # a small input expanded to a large result is not folded
    g.op.Expand(np.array([1], dtype=np.int64), np.array([100_000], dtype=np.int64))
    assert [n.op_type for n in g.nodes] == ["Cos", "Expand"]


def test_folding_variadic_max_min():
    """Max/Min take one or more inputs: every input is folded, not the first two."""
    g = GraphBuilder(20)
    a, b, c = (g.make_initializer("", np.array(v, dtype=np.int64)) for v in ([1, 5], [3, 2], [0, 9]))
    assert g.get_constant(g.op.Max(a, b, c)).tolist() == [3, 9]
    assert g.get_constant(g.op.Min(a, b, c)).tolist() == [0, 2]
    assert g.get_constant(g.op.Max(a)).tolist() == [1, 5]
    assert not g.nodes


def test_a_constant_removed_by_a_pass_is_not_shared_again():
    """Pack rewrites run after remove_unused: an equal small constant they ask for must be
    a live initializer, not the name of one the pass removed (the model would not load)."""
    g = GraphBuilder(20)
    g.make_tensor_input("x", TensorProto.FLOAT, (2, 3))
    unused = g.make_initializer("", np.array([1], dtype=np.int64))
    g.make_tensor_output(g.op.Identity("x", outputs=["y"]), TensorProto.FLOAT, (2, 3))
    g.remove_unused()
    assert unused not in g.constants
    again = g.make_initializer("", np.array([1], dtype=np.int64))
    assert again in g.constants
    assert g.make_initializer("", np.array([1], dtype=np.int64)) == again
