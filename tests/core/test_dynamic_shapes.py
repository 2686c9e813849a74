"""Dimension names: one name one size, Dim names kept, ExportedPrograms with dynamic_shapes,
one ``{axis: name}`` for a whole container, and the export patches' scope."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

import tonnx
from tonnx.testing import run_onnxruntime


def _dims(value_info) -> list:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


class Cat(torch.nn.Module):
    def forward(self, a, b):
        return torch.cat([a, b]), b * 2


def test_one_name_on_two_sizes_is_refused():
    """Was: accepted, output declared ['2*batch', 'batch'] while the model computes a+b rows."""
    a, b = torch.randn(4, 3), torch.randn(5, 3)
    with pytest.raises(tonnx.DynamicShapesError, match=r"'batch'.*different sizes.*4.*5|'batch'.*different sizes.*5.*4"):
        tonnx.to_onnx(Cat(), (a, b), dynamic_shapes=({0: "batch"}, {0: "batch"}))


def test_two_names_stay_apart():
    a, b = torch.randn(4, 3), torch.randn(5, 3)
    onx = tonnx.to_onnx(Cat(), (a, b), dynamic_shapes=({0: "n"}, {0: "m"}))
    assert _dims(onx.graph.output[0])[0] in ("m + n", "n + m")
    a2, b2 = torch.randn(2, 3), torch.randn(6, 3)
    got = run_onnxruntime(onx, [a2.numpy(), b2.numpy()])
    assert got[0].shape == (8, 3)
    np.testing.assert_allclose(got[0], torch.cat([a2, b2]).numpy())


def test_dim_name_kept():
    batch = Dim("batch")
    onx = tonnx.to_onnx(Cat(), (torch.randn(4, 3), torch.randn(4, 3)), dynamic_shapes=({0: batch}, {0: batch}))
    assert _dims(onx.graph.input[0]) == ["batch", 3]
    assert _dims(onx.graph.output[0]) == ["2*batch", 3]


def test_exported_program_with_dynamic_shapes_names_its_dims():
    """Was: the extra dynamic_shapes were ignored and the dimension came out as s31."""
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    batch = Dim("batch")
    ep = torch.export.export(Cat(), (a, b), dynamic_shapes=({0: batch}, {0: batch}))
    onx = tonnx.to_onnx(ep, dynamic_shapes=({0: Dim("batch")}, {0: "batch"}))
    assert _dims(onx.graph.input[0]) == ["batch", 3]
    onx = tonnx.to_onnx(ep, (a, b), dynamic_shapes=({0: "rows"}, None))
    assert _dims(onx.graph.input[1]) == ["rows", 3]


def test_exported_program_refuses_what_it_cannot_use():
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    ep = torch.export.export(Cat(), (a, b), dynamic_shapes=({0: Dim("batch")}, {0: Dim("batch")}))
    with pytest.raises(tonnx.TonnxError, match="already traced"):
        tonnx.to_onnx(ep, (a, b))
    with pytest.raises(tonnx.DynamicShapesError, match="static.*export it again"):
        tonnx.to_onnx(ep, dynamic_shapes=({1: "features"}, None))
    with pytest.raises(tonnx.DynamicShapesError, match="structure"):
        tonnx.to_onnx(ep, (a,), dynamic_shapes=({0: "batch"},))


def test_named_dim_made_static_is_refused():
    """An example of size 1 is specialized by torch.export: refused, never a static 'batch';
    the error names the axis and the fix, not torch's names for it."""
    with pytest.raises(tonnx.DynamicShapesError) as info:
        tonnx.to_onnx(Cat(), (torch.randn(1, 3), torch.randn(1, 3)), dynamic_shapes=({0: "batch"}, {0: "batch"}))
    assert "dynamic_shapes['a'] axis 0 ('batch') is declared dynamic but its example size is 1" in str(info.value)
    assert "use an example size of 2 or more" in str(info.value)
    assert "not tonnx's" not in str(info.value)


class Fixed(torch.nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0], 2, 3)


@pytest.mark.parametrize("dim", ["features", Dim("features"), Dim.DYNAMIC])
def test_a_dynamic_dim_the_model_fixes_is_named_with_its_size(dim):
    with pytest.raises(tonnx.DynamicShapesError) as info:
        tonnx.to_onnx(Fixed(), (torch.randn(4, 6),), dynamic_shapes=({1: dim},))
    text = str(info.value)
    assert text.startswith("dynamic_shapes['x'] axis 1")
    assert "is declared dynamic but the model fixes this dimension to 6" in text
    assert "declare it static" in text and "not tonnx's" not in text


@pytest.mark.parametrize("dim", [Dim("batch"), Dim.DYNAMIC])
def test_a_size_one_example_for_a_dim_names_the_fix(dim):
    with pytest.raises(tonnx.DynamicShapesError, match=r"\['x'\] axis 0.* example size is 1.* 2 or more"):
        tonnx.to_onnx(Fixed(), (torch.randn(1, 6),), dynamic_shapes=({0: dim},))


class SumList(torch.nn.Module):
    def forward(self, xs: list[torch.Tensor]):
        return sum(x.sum(0) for x in xs)


def test_one_spec_for_a_whole_list():
    xs = [torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3)]
    onx = tonnx.to_onnx(SumList(), (xs,), dynamic_shapes={"xs": {0: "n"}})
    assert [_dims(i) for i in onx.graph.input] == [["n", 3]] * 3
    other = [torch.randn(7, 3) for _ in range(3)]
    got = run_onnxruntime(onx, [x.numpy() for x in other])
    np.testing.assert_allclose(got[0], SumList()(other).numpy(), rtol=1e-5, atol=1e-5)


class TakesKeywords(torch.nn.Module):
    """forward reads its inputs from ``**kwargs``, as transformers 5.24 takes ``past_key_values``."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, **kwargs):
        return self.lin(x) + kwargs["past"][0] * kwargs["past"][1]


def test_dynamic_inputs_through_var_keyword():
    """Was: torch.export's AssertionError 'Must provide a tree_name when there might be a
    mismatch', then DynamicShapesError 'not arguments of forward'."""
    model = TakesKeywords()
    past = [torch.randn(4, 3), torch.randn(4, 3)]
    onx = tonnx.to_onnx(
        model, (torch.randn(4, 3),), {"past": past}, dynamic_shapes={"x": {0: "n"}, "past": {0: "n"}}
    )
    assert [i.name for i in onx.graph.input] == ["x", "past.0", "past.1"]
    assert [_dims(i) for i in onx.graph.input] == [["n", 3]] * 3
    assert "forward" not in model.__dict__  # the explicit signature lasted for the export only
    x, other = torch.randn(7, 3), [torch.randn(7, 3), torch.randn(7, 3)]
    got = run_onnxruntime(onx, [x.numpy(), *(t.numpy() for t in other)])
    np.testing.assert_allclose(got[0], model(x, past=other).detach().numpy(), rtol=1e-5, atol=1e-5)


class CacheBranch(torch.nn.Module):
    def forward(self, x, cache):
        keys = cache.layers[0].keys
        return keys * 2 if keys.shape[2] >= 8 else keys + x


def test_cache_length_capped_by_the_trace_is_refused():
    """torch.export silently caps a Dim.DYNAMIC the code branches on (past in [2, 7], as a
    sliding-window layer does): the model would be wrong beyond, its outputs declared 7 long."""
    transformers = pytest.importorskip("transformers")
    cache = transformers.cache_utils.DynamicCache([(torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4))])
    with pytest.raises(tonnx.DynamicShapesError, match=r"past in \[2, 7\] only"):
        tonnx.to_onnx(CacheBranch(), (torch.randn(1), cache), dynamic_shapes=(None, {2: "past"}))
    cache = transformers.cache_utils.DynamicCache([(torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4))])
    past = Dim("past", max=7)
    onx = tonnx.to_onnx(CacheBranch(), (torch.randn(1), cache), dynamic_shapes=(None, {2: past}))
    assert _dims(onx.graph.input[1]) == [1, 2, "past", 4]


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def test_two_names_for_one_dimension_are_refused():
    """Was: 'b' silently renamed 'a' (torch.export unifies the two: x + y needs them equal)."""
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    with pytest.raises(tonnx.DynamicShapesError, match=r"names one dimension twice.*'a'.*'b'.*same name \('a'\)"):
        tonnx.to_onnx(Add(), (x, y), dynamic_shapes=({0: "a"}, {0: "b"}))
    onx = tonnx.to_onnx(Add(), (x, y), dynamic_shapes=({0: "a"}, {0: "a"}))
    assert _dims(onx.graph.input[1]) == ["a", 3]


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_dimension_name_is_refused(name):
    with pytest.raises(tonnx.DynamicShapesError, match="must not be empty"):
        tonnx.to_onnx(Add(), (torch.randn(4, 3), torch.randn(4, 3)), dynamic_shapes=({0: name}, {0: name}))


def test_a_size_from_floor_division_by_a_size_gets_a_fresh_name():
    """torch's view(-1, 6) sizes divide by symbolic sizes, and torch's simplification of
    them is not exact (the issue saw c*((4//(((2*c)//3)))): 0 at c = 9, where the size is
    6): such a dimension gets a fresh name, never the formula. A formula dividing by a
    constant is kept, and what is declared agrees with onnxruntime at every size."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv

    from tonnx.pipeline.interpret._values import ShapeNamer

    s = sympy.Symbol("s0", integer=True, positive=True)

    class Size:  # what ShapeNamer reads of a SymInt
        def __init__(self, expr):
            self.node = type("node", (), {"expr": expr})()

    namer = ShapeNamer({"s0": "c"})
    wrong = namer.dim(Size(s * FloorDiv(4, FloorDiv(2 * s, 3))))
    assert wrong.startswith("unk__") and namer.dim(Size(FloorDiv(2 * s, 3))) == "((2*c)//3)"

    class View(torch.nn.Module):
        def forward(self, x):
            return x.view(-1, 6)

    onx = tonnx.to_onnx(View(), (torch.randn(6, 4),), dynamic_shapes=({0: "c"},))
    declared = _dims(onx.graph.output[0])
    assert declared[1] == 6 or declared[1].startswith("unk__"), declared
    for c in (3, 9, 12):
        (got,) = run_onnxruntime(onx, [np.zeros((c, 4), np.float32)])
        for d, size in zip(declared, got.shape):
            assert d == size or type(d) is str and (d.startswith("unk__") or eval(d, {"c": c}) == size)
