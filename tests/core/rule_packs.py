"""Packs holding only rewrite rules, registered through ``Dispatcher(extra_packs=...)``, for
the tests of the rewrite sweep (test_rewrites.py, test_derived_weights.py)."""

from __future__ import annotations

import itertools

import pytest

from tonnx import PackSpec, hookimpl

_IDS = itertools.count()


@pytest.fixture(autouse=True)
def fresh_manager():
    """Packs given as extra_packs stay registered in the process's manager: start clean."""
    from tonnx.dispatch._manager import reset_default_manager

    reset_default_manager()
    yield
    reset_default_manager()


class RulePack:
    """A pack object with rewrite rules only (registered through Dispatcher(extra_packs))."""

    def __init__(self, rules, priority=100):
        self.name = f"rules{next(_IDS)}"
        self.rules = rules
        self.priority = priority

    @hookimpl
    def tonnx_pack(self) -> PackSpec:
        return PackSpec(name=self.name, load=list, priority=self.priority, rewrites=lambda: self.rules)
