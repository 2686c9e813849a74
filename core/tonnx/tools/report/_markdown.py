"""An :class:`~tonnx.tools.report._record.ExportRecord` as markdown: what failed and the fix, or what ran."""

from __future__ import annotations

import operator
import traceback
from collections import Counter
from typing import Any

from tonnx.tools.report._record import PHASES, ExportRecord

#: FX node names listed per missing op before "...".
NODES_SHOWN = 5


def render(record: ExportRecord) -> str:
    lines = [f"# tonnx export report: {'FAILED' if record.error is not None else 'succeeded'}", ""]
    lines += _environment(record)
    lines += _timings(record)
    if record.error is not None:
        lines += _failure(record)
    lines += _packs(record)
    missing = _missing_ops(record)
    if missing:
        lines += _missing_section(record, missing)
    if record.error is None:
        lines += _ops_by_pack(record)
    return "\n".join(lines).rstrip() + "\n"


def _environment(record: ExportRecord) -> list[str]:
    from tonnx._version import __version__

    versions = [f"tonnx {__version__}"]
    for module in ("torch", "onnx", "onnxruntime"):
        try:
            versions.append(f"{module} {__import__(module).__version__}")
        except ImportError:
            versions.append(f"{module} (not installed)")
    lines = [f"Versions: {', '.join(versions)}."]
    if record.registry is not None:
        lines.append(f"Target opset: {record.registry.opset}.")
    return lines + [""]


def _timings(record: ExportRecord) -> list[str]:
    lines = ["## Phases", "", "| phase | ms |", "|---|---:|"]
    for phase in PHASES:
        if phase in record.timings:
            mark = " (failed here)" if phase == record.failed_phase else ""
            lines.append(f"| {phase}{mark} | {record.timings[phase] * 1000:.1f} |")
        else:
            lines.append(f"| {phase} | not run |")
    total = sum(record.timings.values())
    return lines + [f"| total | {total * 1000:.1f} |", ""]


def _failure(record: ExportRecord) -> list[str]:
    error = record.error
    lines = ["## Failure", "", f"Phase: **{record.failed_phase or 'before export'}**; "
             f"error: `{type(error).__name__}`.", "", "```text", str(error).strip(), "```", ""]
    node = record.failing_node()
    if node is not None:
        from tonnx.dispatch._converter import target_key

        key = target_key(node.target) if callable(node.target) else str(node.target)
        lines += ["### Failing op", "", f"- op: `{key}`", f"- FX node: `{node.format_node()}`"]
        cand = record.interpreter.plan.get(node)
        if cand is not None:
            lines.append(f"- converter: {cand.describe()}")
        if record.registry is not None:
            others = record.registry.candidates(key)
            if len(others) > 1:
                lines.append("- other candidates, in the order tried: "
                             + "; ".join(c.describe() for c in others[1:]))
        lines.append("")
        lines += _stack(node)
    cause = error.__cause__
    if cause is not None and record.failed_phase == "export":
        lines += ["### Where in your code", "", "```text", *_user_frames(cause), "```", ""]
    return lines


def _stack(node) -> list[str]:
    trace = node.meta.get("stack_trace")
    if not trace:
        return ["(torch.export recorded no stack trace for this node.)", ""]
    return ["Stack trace recorded by torch.export (your code is the last frames):", "",
            "```text", trace.rstrip(), "```", ""]


def _user_frames(error: BaseException) -> list[str]:
    """The frames of an exception outside torch and tonnx (the user's lines), else all."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if not _library_file(f.filename)]
    chosen = mine or frames[-3:]
    return [line.rstrip() for line in traceback.format_list(chosen)] + [
        f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    ]


def _library_file(filename: str) -> bool:
    parts = filename.replace("\\", "/").split("/")
    return any(p in ("torch", "tonnx", "site-packages", "dist-packages") for p in parts) or (
        filename.startswith("<")
    )


def _packs(record: ExportRecord) -> list[str]:
    rows = record.packs_in_order()
    if not rows:
        return []
    lines = ["## Packs consulted, in priority order", "",
             "| pack | version | priority | kind |", "|---|---|---:|---|"]
    if record.registry is not None and any(
        c.pack == "<dispatcher>" for k in record.registry.keys() for c in record.registry.candidates(k)
    ):
        lines.append("| Dispatcher(converters=...) | - | always first | in-house |")
    for name, version, priority, fallback in rows:
        lines.append(f"| {name} | {version} | {priority} | {'fallback' if fallback else 'pack'} |")
    manager = record.manager
    if manager is not None:
        off = [n for n in sorted(manager.specs) if n not in record.registry.packs]
        if off:
            lines += ["", f"Installed but not enabled: {', '.join(off)}."]
        if manager.failures:
            lines += ["", f"Failed to load: {manager.failures}."]
    return lines + [""]


def _missing_ops(record: ExportRecord) -> dict[str, list]:
    """Every op without a converter -> ``(user's FX node, what reached it)`` pairs.

    Ops of the graph (subgraphs included) are reached by ``None``; ops of the graph a
    decomposition (a graph converter) lowers a user's op into are reached by that op's key,
    and listed under the user's node, whose stack trace is the user's line.
    """
    if record.ep is None or record.registry is None:
        return {}
    missing: dict[str, list] = {}
    expansions = getattr(record.interpreter, "expansions", None) or {}
    for module in record.ep.graph_module.modules():
        graph = getattr(module, "graph", None)
        for node in graph.nodes if graph is not None else ():
            for key, via in _missing_in(record, node, expansions, None, set()):
                missing.setdefault(key, []).append((node, via))
    return missing


def _missing_in(record: ExportRecord, node, expansions: dict, via: str | None, seen: set):
    """``(key, via)`` for ``node`` and, through decompositions, the nodes it lowers into."""
    from tonnx.dispatch._converter import target_key
    from tonnx.pipeline.interpret import _control_flow, _symbolic
    from tonnx.pipeline.interpret._values import complex_values

    native = set(_symbolic.handlers()) | set(_symbolic.no_op_targets()) | set(_control_flow.targets())
    if node.op != "call_function" or node.target is operator.getitem or node.target in native:
        return
    key = target_key(node.target)
    try:
        found = record.registry.resolve(key, node, complex=bool(complex_values(node)))
    except Exception:  # a tie is reported as the error itself
        return
    if found is None:
        yield key, via
        return
    sub = expansions.get(node)
    if sub is not None and id(sub) not in seen:
        seen.add(id(sub))
        for inner in sub.graph.nodes:
            yield from _missing_in(record, inner, expansions, via or key, seen)


def _missing_section(record: ExportRecord, missing: dict[str, list]) -> list[str]:
    lines = [f"## Ops without a converter ({len(missing)})", ""]
    for key, pairs in sorted(missing.items()):
        nodes = [n for n, _ in pairs]
        names = ", ".join(f"`{n.name}`" for n in nodes[:NODES_SHOWN])
        more = f" and {len(nodes) - NODES_SHOWN} more" if len(nodes) > NODES_SHOWN else ""
        lines.append(f"### `{key}`: {len(nodes)} node(s): {names}{more}")
        lines.append("")
        vias = sorted({via for _, via in pairs if via})
        if vias:
            by = ", ".join(f"`{v}`" for v in vias)
            lines += [f"Not in your graph: reached through the decomposition of {by} (your op, "
                      f"node(s) above), which lowers it into `{key}`.", ""]
        where = _last_user_line(nodes[0])
        if where:
            lines += [f"First use: `{where}`", ""]
        lines += [f"- {fix}" for fix in _fixes(record, key)]
        lines.append("")
    return lines


def _last_user_line(node) -> str:
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    files = [i for i, line in enumerate(trace) if line.strip().startswith("File ")]
    if not files:
        return ""
    i = files[-1]
    code = trace[i + 1].strip() if i + 1 < len(trace) else ""
    return f"{trace[i].strip()}: {code}"


def _fixes(record: ExportRecord, key: str) -> list[str]:
    """Each way to get a converter for ``key``, with the exact argument or command."""
    from tonnx.dispatch._converter import packet_key

    fixes = []
    manager = record.manager
    enabled_fallbacks = [n for n, spec in record.registry.packs.items() if spec is not None and spec.fallback]
    if enabled_fallbacks:
        fixes.append(f"the fallback pack(s) enabled ({', '.join(enabled_fallbacks)}) do not convert "
                     f"it either")
    for name in sorted(manager.specs) if manager is not None else ():
        if name in record.registry.packs:
            continue
        try:
            keys = {c.key for c in manager.converters(name)}
        except Exception:  # a broken pack is listed under "Failed to load"
            continue
        if key in keys or packet_key(key) in keys:
            spec = manager.specs[name]
            how = "fallback pack" if spec.fallback else "installed pack, disabled"
            arg = f"fallback='{name}'" if spec.fallback else f"packs=['{name}']"
            cli = f"--fallback {name}" if spec.fallback else f"--pack {name}={spec.priority}"
            fixes.append(f"{how} `{name}` converts it: `to_onnx(..., dispatcher=tonnx."
                         f"Dispatcher({arg}))`, or `tonnx export ... {cli}`, or "
                         f"`TONNX_PACKS={name}`")
    if _onnxscript_has(key) and "onnxscript" not in (manager.specs if manager else {}):
        fixes.append("onnxscript's torch_lib converts it: install the onnxscript fallback pack, "
                     "then `dispatcher=tonnx.Dispatcher(fallback='onnxscript')` or "
                     "`tonnx export ... --fallback onnxscript`")
    fixes.append(f"write one: `dispatcher=tonnx.Dispatcher(converters={{'{key}': my_converter}})` "
                 "(docs/writing-converters.md)")
    return fixes


def _onnxscript_has(key: str) -> bool:
    try:
        import onnxscript.function_libs.torch_lib.ops  # noqa: F401  (fills the registry)
        from onnxscript.function_libs.torch_lib.registration import default_registry
    except Exception:  # onnxscript absent or changed: no hint, not an error
        return False
    name, _, overload = key.partition(".")
    return key in default_registry or (overload == "default" and name in default_registry)


def _ops_by_pack(record: ExportRecord) -> list[str]:
    by_pack = record.ops_by_pack()
    if not by_pack:
        return []
    lines = ["## Ops converted, by pack", "", "| pack | FX nodes | distinct ops | ops |",
             "|---|---:|---:|---|"]
    for pack, counts in sorted(by_pack.items(), key=lambda kv: -sum(kv[1].values())):
        ops = ", ".join(f"`{k}` x{v}" for k, v in counts.most_common())
        lines.append(f"| {pack} | {sum(counts.values())} | {len(counts)} | {ops} |")
    model = record.model
    if model is not None:
        domains: Counter[Any] = Counter(n.domain or "ai.onnx" for n in model.graph.node)
        lines += ["", f"ONNX model: {len(model.graph.node)} nodes "
                  f"({', '.join(f'{d}: {c}' for d, c in domains.items())}), "
                  f"{len(model.graph.initializer)} initializers."]
    return lines + [""]
