"""Meta-tests of the prims pack: every converter is tested and follows its prims schema."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
import torch

from tonnx_prims._table import converters

HERE = Path(__file__).parent


def _covers_of(path: Path) -> set[str]:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COVERS" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def _covered() -> dict[str, str]:
    found = {}
    for path in sorted(HERE.glob("test_*.py")):
        for key in _covers_of(path):
            found[key] = path.name
    return found


def test_every_converter_has_a_conformance_test():
    missing = sorted({c.key for c in converters()} - set(_covered()))
    assert not missing, f"converters without a hypothesis test (add them to a COVERS set): {missing}"


def test_covers_lists_only_registered_converters():
    registered = {c.key for c in converters()}
    stale = {k: f for k, f in _covered().items() if k not in registered}
    assert not stale, f"COVERS names keys the pack does not register: {stale}"


def _overload(key: str):
    ns, _, rest = key.partition("::")
    name, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, ns), name, None)
    return getattr(packet, overload, None) if packet is not None else None


@pytest.mark.parametrize("conv", converters(), ids=lambda c: c.key)
def test_parameters_follow_the_schema(conv):
    """Every schema argument is a parameter of the converter, by name; the docstring is
    the schema line."""
    op = _overload(conv.key)
    if op is None:
        pytest.fail(f"{conv.key} is not an op overload of this torch")
    params = list(inspect.signature(conv.function).parameters.values())
    assert [p.name for p in params[:3]] == ["g", "sts", "outputs"], conv.qualified_name
    names = {p.name: p for p in params[3:]}
    schema_names = [a.name for a in op._schema.arguments]
    absent = [n for n in schema_names if n not in names]
    assert not absent, f"{conv.qualified_name} lacks schema parameters {absent} of {op._schema}"
    extra = [n for n, p in names.items() if n not in schema_names and p.default is inspect.Parameter.empty]
    assert not extra, f"{conv.qualified_name} has parameters {extra} without default, not in {op._schema}"
    schema_line = str(op._schema).removeprefix("prims::")
    assert inspect.getdoc(conv.function) == schema_line, conv.qualified_name
    assert conv.function.__name__ == "prims_" + conv.key.split("::")[1].split(".")[0]
