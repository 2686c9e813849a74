"""Packs' rewrite rules (PackSpec.rewrites): the sweep, its priority and opt-in rules."""

from __future__ import annotations

import pytest
import torch
from rule_packs import RulePack, fresh_manager  # noqa: F401 (fixture, autouse)

import tonnx
from tonnx.converters import RewriteRule
from tonnx.testing import check_model


def _times_three_as_sum(ctx, node):
    """``Mul(x, 3)`` -> ``Sum(x, x, x)``."""
    x, three = node.inputs
    g = ctx.g
    if not g.is_constant(three) or g.get_constant(three).size != 1 or float(g.get_constant(three)) != 3:
        return None
    return [ctx.node("Sum", [x, x, x], node.outputs)]



def _neg_add_as_sub(ctx, node):
    """``Add(Neg(a), b)`` -> ``Sub(b, a)``: the Neg left without reader dies."""
    neg = ctx.producer(node.inputs[0])
    if neg is None or neg.op_type != "Neg":
        return None
    return [ctx.node("Sub", [node.inputs[1], neg.inputs[0]], node.outputs)]


class Thrice(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x * 3) + (-y)


class NegAdd(torch.nn.Module):
    def forward(self, x, y):
        return -x + y


def _inputs():
    return torch.randn(3, 4), torch.randn(3, 4)


def _ops(onx) -> list[str]:
    return [n.op_type for n in onx.graph.node]


def _converter_of(onx, op_type: str) -> str:
    node = next(n for n in onx.graph.node if n.op_type == op_type)
    return {p.key: p.value for p in node.metadata_props}["pkg.tonnx.converter"]


def test_rule_fires_and_is_recorded():
    pack = RulePack([RewriteRule("times_three_as_sum", "Mul", _times_three_as_sum)])
    onx = check_model(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))
    assert "Mul" not in _ops(onx)
    assert _converter_of(onx, "Sum") == f"{pack.name}:times_three_as_sum"
    assert not _converter_of(onx, "Relu").startswith(pack.name)
    meta = {p.key: p.value for p in onx.metadata_props}
    assert meta["pkg.tonnx.rewrites"] == f"{pack.name}:times_three_as_sum x1"


def test_dead_producers_are_removed():
    pack = RulePack([RewriteRule("neg_add_as_sub", "Add", _neg_add_as_sub)])
    onx = check_model(NegAdd(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))
    assert _ops(onx) == ["Sub"]


def test_blocked_pack_rules_never_run():
    calls = []

    def spy(ctx, node):
        calls.append(node)
        return None

    pack = RulePack([RewriteRule("spy", "Mul", spy)])
    onx = check_model(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[pack], packs=[f"no:{pack.name}"]))
    assert "Mul" in _ops(onx) and not calls
    check_model(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))
    assert calls


def test_higher_priority_pack_rule_wins():
    low = RulePack([RewriteRule("as_sum", "Mul", _times_three_as_sum)], priority=100)

    def as_adds(ctx, node):
        x, _ = node.inputs
        twice = ctx.node("Add", [x, x], 1)
        return [twice, ctx.node("Add", [twice.outputs[0], x], node.outputs)]

    high = RulePack([RewriteRule("as_adds", "Mul", as_adds)], priority=150)
    onx = check_model(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[low, high]))
    assert "Sum" not in _ops(onx)
    assert _converter_of(onx, "Add") == f"{high.name}:as_adds"


def test_equal_priority_rules_on_one_op_conflict():
    a = RulePack([RewriteRule("a", "Mul", _times_three_as_sum)])
    b = RulePack([RewriteRule("b", "Mul", _times_three_as_sum)])
    with pytest.raises(tonnx.ConverterConflictError, match=f"{a.name}:a.*{b.name}:b|{b.name}:b.*{a.name}:a"):
        tonnx.to_onnx(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[a, b]))


def test_rule_priority_shifts_with_its_pack():
    """A rule's own priority sits below (or above) its pack's: no tie with another pack's
    rule on the same op at the pack's priority (the aten pack's standard-domain fusions sit
    at 50 so that packs at the default 100 keep theirs); re-prioritising the pack moves it."""
    a = RulePack([RewriteRule("a", "Mul", _times_three_as_sum, priority=60)])

    def as_adds(ctx, node):
        x, _ = node.inputs
        twice = ctx.node("Add", [x, x], 1)
        return [twice, ctx.node("Add", [twice.outputs[0], x], node.outputs)]

    b = RulePack([RewriteRule("b", "Mul", as_adds)])
    onx = check_model(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[a, b]))
    assert _converter_of(onx, "Add") == f"{b.name}:b" and "Sum" not in _ops(onx)
    onx = check_model(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[a, b], packs=[f"{a.name}=141"]))
    assert _converter_of(onx, "Sum") == f"{a.name}:a"
    with pytest.raises(tonnx.ConverterConflictError, match="at priority 100"):
        tonnx.to_onnx(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[a, b], packs=[f"{a.name}=140"]))


def test_rule_losing_an_output_is_an_error():
    def lossy(ctx, node):
        return [ctx.node("Add", [node.inputs[0], node.inputs[0]], 1)]

    pack = RulePack([RewriteRule("lossy", "Mul", lossy)])
    with pytest.raises(tonnx.TonnxError, match="lossy.*must produce every output"):
        tonnx.to_onnx(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))


def test_rule_recreating_its_anchor_stops_with_an_error():
    def again(ctx, node):
        return [ctx.node("Mul", list(node.inputs), node.outputs)]

    pack = RulePack([RewriteRule("again", "Mul", again)])
    with pytest.raises(tonnx.TonnxError, match="again.*in a chain"):
        tonnx.to_onnx(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))


def test_pack_returning_something_else_fails_to_load():
    pack = RulePack(["not a rule"])
    with pytest.raises(tonnx.PackLoadError, match="RewriteRule"):
        tonnx.to_onnx(Thrice(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))


class CatNegAbs(torch.nn.Module):
    """``c = cat(a, b)`` is an output and, through a Neg, the Abs's input."""

    def __init__(self, neg_out=False):
        super().__init__()
        self.neg_out = neg_out

    def forward(self, a, b):
        c = torch.cat([a, b])
        n = -c
        return (c, n.abs(), n) if self.neg_out else (c, n.abs())


def _abs_of_cat(ctx, node):
    """``Abs(Neg(Concat(a, b)))`` -> ``Concat(a, b)`` and ``Abs`` of it placed at the Abs,
    taking the Concat over (its output stays a graph output): the Neg between dies with it."""
    neg = ctx.producer(node.inputs[0])
    cat = neg and ctx.producer(neg.inputs[0])
    if cat is None or neg.op_type != "Neg" or cat.op_type != "Concat":
        return None
    again = ctx.node("Concat", list(cat.inputs), cat.outputs, axis=cat.attributes["axis"])
    new = [again, ctx.node("Abs", [cat.outputs[0]], node.outputs)]
    return new if ctx.take_over(cat, replacement=new) else None


def test_take_over_sees_through_nodes_that_die_with_the_anchor():
    pack = RulePack([RewriteRule("abs_of_cat", "Abs", _abs_of_cat)])
    onx = check_model(CatNegAbs(), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))
    assert _ops(onx) == ["Concat", "Abs"]
    assert _converter_of(onx, "Concat") == f"{pack.name}:abs_of_cat"


def test_take_over_refuses_when_a_reader_in_between_stays():
    """The Neg is an output too: it stays, reads the Concat, so the Concat cannot move."""
    pack = RulePack([RewriteRule("abs_of_cat", "Abs", _abs_of_cat)])
    onx = check_model(CatNegAbs(neg_out=True), _inputs(), dispatcher=tonnx.Dispatcher(extra_packs=[pack]))
    assert sorted(_ops(onx)) == ["Abs", "Concat", "Neg"]
    assert "pkg.tonnx.rewrites" not in {p.key for p in onx.metadata_props}
