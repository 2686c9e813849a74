"""What export-llm's own rewrite rules share: a pack holding them, and reading the graph.

export-llm adds packs for one export only (``Dispatcher(extra_packs=[...])``): the
quantization of ``--precision int4|int8`` and the genai folder's step rules (rotary tables,
attention bias). Each is a pack object with rewrite rules and no converter.
"""

from __future__ import annotations

from typing import Any

MS_DOMAIN = "com.microsoft"
#: above the ortcontrib pack (200): export-llm's rules see its fused ops
PRIORITY = 300


def rules_pack(name: str, description: str, rules: list, runtime_requirements=None) -> Any:
    """A pack object (for ``Dispatcher(extra_packs=[...])``) whose rewrite rules are ``rules``."""
    import types

    import tonnx

    def tonnx_pack():
        return tonnx.PackSpec(
            name=name, load=lambda: [], version="0.1.0", priority=PRIORITY,
            domains={MS_DOMAIN: 1}, description=description, rewrites=lambda: rules,
            runtime_requirements=runtime_requirements,
        )

    return types.SimpleNamespace(tonnx_pack=tonnx.hookimpl(tonnx_pack))


def producer(ctx, name: str, op_type: str):
    """The node computing ``name`` when it is a standard-domain ``op_type`` node, else None."""
    node = ctx.producer(name) if name else None
    return node if node is not None and node.op_type == op_type and not node.domain else None


def constant(ctx, name: str):
    """The value of a constant input, None for a runtime one."""
    g = ctx.g
    return g.get_constant(name) if name and g.is_constant(name) else None


def only_read_by_pattern(ctx, *names: str) -> bool:
    """Each intermediate has one reader (the next node of the pattern) and is no output."""
    return all(ctx.readers(n) == 1 and not ctx.is_output(n) for n in names)


def same_dimension(a, b) -> bool:
    """Two dimensions known to be equal (the same int or the same symbol)."""
    return a == b and type(a) is type(b)
