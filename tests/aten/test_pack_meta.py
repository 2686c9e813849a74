"""Meta-tests of the aten pack: every converter is tested and follows its ATen schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from tonnx.testing import assert_follows_schema, assert_pack_covered
from tonnx_aten._table import converters as all_converters

HERE = Path(__file__).parent


def converters() -> list:
    """The direct converters; decomposition converters are checked by test_decompositions.py."""
    return [c for c in all_converters() if not hasattr(c.function, "expand")]


def test_every_converter_has_a_conformance_test():
    """Every key is in a COVERS set of tests/aten, and no COVERS entry is stale (the kit's check)."""
    assert_pack_covered("aten", HERE, ignore=lambda c: hasattr(c.function, "expand"))


@pytest.mark.parametrize("conv", converters(), ids=lambda c: c.key)
def test_parameters_follow_the_schema(conv):
    """Every schema argument is a parameter of the converter, by name; extras have defaults."""
    assert_follows_schema(conv)
