"""``export_modules_as_functions``: chosen submodules become ONNX local functions.

A pass over the exported ``ModelProto``: every node carries the module it came from (its
``namespace`` metadata, ``"path: Class"``), so the nodes of one module instance are those
whose path is the instance's or below it. Instances are extracted deepest first, each
replaced by one call node (which keeps the instance's path, so an enclosing module's
function contains the call); instances of one class whose bodies are identical once names
are canonical share one ``FunctionProto`` (one per distinct module type and signature).
Weights become function inputs, so the layers of a transformer share one function.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: Domain of the functions tonnx makes from modules.
DOMAIN = "pkg.tonnx.modules"


def module_classes(ep) -> dict[str, str]:
    """Module path -> class qualified name, from torch.export's ``nn_module_stack``."""
    classes: dict[str, str] = {}
    for node in ep.graph.nodes:
        for path, cls in (node.meta.get("nn_module_stack") or {}).values():
            classes.setdefault(path, _class_name(cls))
    return classes


def _class_name(cls) -> str:
    if isinstance(cls, type):
        return f"{cls.__module__}.{cls.__qualname__}"
    return str(cls)


def select_paths(classes: dict[str, str], wanted: Any) -> list[str]:
    """The instance paths to extract: every module (``True``) or those of the given types."""
    if wanted is True:
        chosen = [p for p in classes if p]
    else:
        names = {_class_name(t) for t in wanted}
        chosen = [p for p, c in classes.items() if p and c in names]
    return sorted(chosen, key=lambda p: (-p.count("."), p))  # deepest first


def modules_as_functions(model, ep, wanted: Any, *, inline: bool = False):
    """Returns ``model`` with the chosen module instances as local functions (or inlined)."""
    import onnx

    classes = module_classes(ep)
    functions: dict[tuple, onnx.FunctionProto] = {}
    for path in select_paths(classes, wanted):
        _extract(model, path, classes[path], functions)
    if functions:
        model.functions.extend(functions.values())
        if all(o.domain != DOMAIN for o in model.opset_import):
            model.opset_import.append(onnx.helper.make_opsetid(DOMAIN, 1))
    if inline:
        import onnx.inliner

        inlined = onnx.inliner.inline_local_functions(model)
        del inlined.opset_import[:]
        inlined.opset_import.extend(o for o in model.opset_import if o.domain != DOMAIN)
        return inlined
    return model


def _path_of(node) -> str:
    for prop in node.metadata_props:
        if prop.key == "namespace":
            return prop.value.split(": ", 1)[0]
    return ""


def _extract(model, path: str, cls: str, functions: dict) -> None:
    graph = model.graph
    nodes = list(graph.node)
    inside = [i for i, n in enumerate(nodes) if (p := _path_of(n)) == path or p.startswith(path + ".")]
    if not inside:
        return
    group = [nodes[i] for i in inside]
    produced = {o for n in group for o in n.output if o}
    inputs = _ordered(name for n in group for name in _reads(n) if name not in produced)
    chosen = set(inside)
    used_outside = {name for i, n in enumerate(nodes) if i not in chosen for name in _reads(n)}
    used_outside |= {o.name for o in graph.output}
    outputs = [o for n in group for o in n.output if o and o in used_outside]
    function = _function(group, inputs, outputs, cls, model, functions)
    call = _call(function, inputs, outputs, path, cls)
    remaining = [n for i, n in enumerate(nodes) if i not in chosen]
    ordered = _topological(remaining + [call], graph)
    if ordered is None:  # another node sits between the module's nodes: leave it inline
        return
    del graph.node[:]
    graph.node.extend(ordered)


def _reads(node) -> list[str]:
    """Names a node reads, its subgraphs' outer-scope reads included."""
    names = [i for i in node.input if i]
    for attr in node.attribute:
        for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
            defined = {i.name for i in sub.input} | {t.name for t in sub.initializer}
            defined |= {o for n in sub.node for o in n.output}
            names += [r for n in sub.node for r in _reads(n) if r not in defined]
    return names


def _ordered(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _function(group, inputs, outputs, cls, model, functions):
    """The FunctionProto for this body: reused when an identical one exists for the class."""
    import onnx

    rename = {name: f"x{i}" for i, name in enumerate(inputs)}
    counter = 0
    body = []
    for node in group:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        for i, name in enumerate(copy.input):
            copy.input[i] = rename.get(name, name)
        for i, name in enumerate(copy.output):
            if name:
                rename[name] = copy.output[i] = f"t{counter}"
                counter += 1
        _rename_subgraph_reads(copy, rename)
        body.append(copy)
    out_names = [rename[o] for o in outputs]
    key = (cls, len(inputs), tuple(out_names),
           tuple(_without_metadata(n).SerializeToString(deterministic=True) for n in body))
    found = functions.get(key)
    if found is not None:
        return found
    base = re.sub(r"\W", "_", cls.rsplit(".", 1)[-1])
    taken = {f.name for f in functions.values()}
    name = base if base not in taken else f"{base}_{sum(f.name.startswith(base) for f in functions.values())}"
    opsets = [o for o in model.opset_import]
    function = onnx.helper.make_function(
        DOMAIN, name, [f"x{i}" for i in range(len(inputs))], out_names, body,
        opset_imports=opsets if any(o.domain == DOMAIN for o in opsets)
        else [*opsets, onnx.helper.make_opsetid(DOMAIN, 1)],
        doc_string=f"module {cls}",
    )
    functions[key] = function
    return function


def _rename_subgraph_reads(node, rename: dict) -> None:
    for attr in node.attribute:
        for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
            for inner in sub.node:
                for i, name in enumerate(inner.input):
                    inner.input[i] = rename.get(name, name)
                _rename_subgraph_reads(inner, rename)


def _without_metadata(node):
    import onnx

    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    copy.name = ""
    del copy.metadata_props[:]
    return copy


def _call(function, inputs, outputs, path: str, cls: str):
    import onnx

    node = onnx.helper.make_node(function.name, inputs, outputs, name=path or cls, domain=DOMAIN)
    entry = node.metadata_props.add()
    entry.key, entry.value = "namespace", f"{path}: {cls}"
    entry = node.metadata_props.add()
    entry.key, entry.value = "pkg.tonnx.converter", f"function {DOMAIN}.{function.name}"
    return node


def _topological(nodes: list, graph) -> list | None:
    """Nodes in an order where each reads only what exists; None if they form a cycle."""
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    producer = {o: k for k, n in enumerate(nodes) for o in n.output if o}
    waiting = [{r for r in _reads(n) if r not in available and r in producer} for n in nodes]
    users: dict[int, list[int]] = {}
    for k, needs in enumerate(waiting):
        for r in needs:
            users.setdefault(producer[r], []).append(k)
    counts = [len({producer[r] for r in needs}) for needs in waiting]
    import heapq

    ready = [k for k, c in enumerate(counts) if c == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(nodes[k])
        for user in set(users.get(k, ())):
            counts[user] -= 1
            if counts[user] == 0:
                heapq.heappush(ready, user)
    return order if len(order) == len(nodes) else None


def finish(model, ep, wanted: Any, *, inline: bool, filename: str | None, external_data, weights):
    """to_onnx's last step with ``export_modules_as_functions``: the pass, then the file."""
    from tonnx._errors import TonnxError

    if weights is not None or external_data:
        raise TonnxError(
            "export_modules_as_functions writes the model in one piece: it cannot be combined "
            "with weights= or external_data=True (export without functions for those)."
        )
    if wanted is not True and (isinstance(wanted, type) or not isinstance(wanted, Iterable)):
        raise TonnxError(
            f"export_modules_as_functions={wanted!r}: pass True (every submodule) or a set of "
            f"module classes, e.g. {{LlamaDecoderLayer}}."
        )
    model = modules_as_functions(model, ep, wanted, inline=inline)
    if filename is not None:
        from tonnx.pipeline.write import write_model

        write_model(model, filename)
    return model
