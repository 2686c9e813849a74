"""The state of a builder quoted in every conversion error."""

from __future__ import annotations

#: How many of the last nodes the message shows.
LAST_NODES = 12


def _describe(g, name: str) -> str:
    elem = g.types.get(name, "?")
    shape = g.shapes.get(name)
    dims = "x".join(str(d) for d in shape) if shape is not None else "?"
    const = " (constant)" if name in g.constants else ""
    return f"{name}: type={elem} shape={dims}{const}"


def debug_message(g) -> str:
    lines = [
        "",
        "--DEBUG--",
        f"[GraphBuilder] opsets={g.opsets}, {len(g.inputs)} inputs, {len(g.constants)} "
        f"constants, {len(g.nodes)} nodes, {len(g.outputs)} outputs",
        "--INPUTS--",
    ]
    lines.extend(f"  {_describe(g, i)}" for i in g.inputs)
    for key, value in g.debug_context.items():
        lines.append(f"--{key.upper()}--")
        lines.append(f"  {value}")
    lines.append(f"--LAST {LAST_NODES} NODES--")
    for node in g.nodes[-LAST_NODES:]:
        known = "".join("#" if o in g.shapes else ("T" if o in g.types else "-") for o in node.outputs)
        lines.append(f"  [{known}] {node.name}: {node!r}")
        lines.extend(f"      {_describe(g, o)}" for o in node.outputs if o)
    return "\n".join(lines)
