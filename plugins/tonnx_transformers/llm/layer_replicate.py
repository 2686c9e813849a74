"""A program traced with two decoder layers -> the program of all of them, layer 1 copied.

Given :mod:`.layer_graph`'s template, layer ``i`` (2 <= i < layers) is layer 1's nodes
copied, reading layer ``i``'s weights (``layers.1.*`` renamed ``layers.<i>.*``), layer
``i``'s cache inputs (the input at layer 1's path with its index), layer ``i - 1``'s hidden
state and the nodes all layers share; the head reads the last layer's; layer ``i``'s
cache outputs follow layer ``i - 1``'s. The program's signature, input and output trees
and example inputs are those of the whole model, so that :func:`tonnx.convert` names and
writes it as the whole model's trace: the same ONNX graph, node for node.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

from .layer_graph import LayersDiffer, LayerTemplate


def replicate(program: Any, template: LayerTemplate, layers: int, kwargs: dict, state: dict) -> Any:
    """The ExportedProgram of ``layers`` decoder layers; ``kwargs``: the whole model's example
    call; ``state``: the whole model's parameters and buffers by name (every layer's)."""
    import torch
    from torch.utils import _pytree

    leaves, in_spec = _pytree.tree_flatten_with_path(((), kwargs))
    paths = {path: i for i, (path, _) in enumerate(leaves)}
    specs = {s.arg.name: s for s in program.graph_signature.input_specs}
    graph, env = torch.fx.Graph(), {}
    inputs, per_layer = _placeholders(program, template, layers, specs, paths, graph, env)
    for node in [*template.before, *template.layer0, *template.layer1]:
        if node.op != "placeholder":
            env[node] = graph.node_copy(node, lambda a: env[a])
    copies = {1: {n: env[n] for n in template.layer1}}
    for i in range(2, layers):
        copies[i] = {}
        for node in template.layer1:
            copies[i][node] = graph.node_copy(node, lambda a, i=i: _layer_arg(a, i, template, copies, per_layer, env))
            _rename_stack(copies[i][node], template.prefix, i)
    last = copies[layers - 1]
    for node in template.after:
        env[node] = graph.node_copy(node, lambda a: last.get(a, env.get(a)))
    _output(program, template, layers, graph, env, copies)
    return _program(program, graph, inputs, in_spec, kwargs, state, template, layers)


def _placeholders(program, template, layers, specs, paths, graph, env) -> tuple[list, dict]:
    """The placeholders in the whole model's order: (node, InputSpec) pairs, and for each
    own input of layer 1, its copy per layer. Weights of layer ``i`` follow layer 1's of the
    same kind; user inputs follow the order of the whole model's input tree."""
    own = template.own_inputs
    old = [n for n in program.graph.nodes if n.op == "placeholder"]
    weights = [n for n in old if specs[n.name].kind.name != "USER_INPUT"]
    users = [n for n in old if specs[n.name].kind.name == "USER_INPUT"]
    user_paths = dict(zip(users, (p for p, _ in _user_leaves(program))))
    ordered: list[tuple[Any, Any, int, Any]] = []  # (template node, spec, layer, path)
    for node in weights:
        ordered.append((node, specs[node.name], 1 if node in own else 0, None))
        kind = specs[node.name].kind
        if node in own and node is [n for n in weights if n in own and specs[n.name].kind == kind][-1]:
            ordered += [(n, specs[n.name], i, None) for i in range(2, layers)
                        for n in weights if n in own and specs[n.name].kind == kind]
    entries = [(node, specs[node.name], 0, user_paths[node]) for node in users]
    entries += [(node, specs[node.name], i, _layer_path(user_paths[own[node]], user_paths[node], i))
                for i in range(2, layers) for node in users if node in own]
    if any(path not in paths for *_, path in entries) or len(entries) != len(paths):
        raise LayersDiffer("the whole model's inputs are not layer 1's repeated per layer (paths).")
    ordered += sorted(entries, key=lambda e: paths[e[3]])
    inputs, per_layer = [], {}
    for node, spec, layer, path in ordered:
        new = graph.placeholder(_name(node, spec, layer, path, template.prefix))
        new.meta = copy.copy(node.meta)
        target = spec.target
        if layer >= 2 and spec.kind.name != "USER_INPUT":
            target = f"{template.prefix}.{layer}." + spec.target[len(template.prefix) + 3:]
        inputs.append((new, dataclasses.replace(spec, arg=type(spec.arg)(name=new.name), target=target)))
        if layer >= 2:
            per_layer[(node, layer)] = new
        else:
            env[node] = new
    return inputs, per_layer


def _user_leaves(program) -> list:
    from torch.utils import _pytree

    leaves, spec = _pytree.tree_flatten_with_path(program.example_inputs)
    if spec != program.call_spec.in_spec:
        raise LayersDiffer("the program's example inputs do not flatten as its input tree.")
    return leaves


def _layer_path(path0: tuple, path1: tuple, layer: int) -> tuple | None:
    """Layer ``layer``'s path from layer 0's and layer 1's (one key differs by 0 -> 1)."""
    from torch.utils._pytree import GetAttrKey, MappingKey, SequenceKey

    differ = [j for j, (a, b) in enumerate(zip(path0, path1)) if a != b]
    if len(path0) != len(path1) or len(differ) != 1:
        return None
    j = differ[0]
    a, b = path0[j], path1[j]
    if isinstance(a, SequenceKey) and isinstance(b, SequenceKey) and (a.idx, b.idx) == (0, 1):
        key = SequenceKey(layer)
    elif isinstance(a, (MappingKey, GetAttrKey)) and type(a) is type(b):
        text = _index_swap(str(a.key if isinstance(a, MappingKey) else a.name),
                           str(b.key if isinstance(b, MappingKey) else b.name), layer)
        if text is None:
            return None
        key = MappingKey(text) if isinstance(a, MappingKey) else GetAttrKey(text)
    else:
        return None
    return (*path1[:j], key, *path1[j + 1:])


def _index_swap(text0: str, text1: str, layer: int) -> str | None:
    """``"0.key"``, ``"1.key"``, 5 -> ``"5.key"``: the one number that differs, replaced."""
    parts0, parts1 = re.split(r"(\d+)", text0), re.split(r"(\d+)", text1)
    differ = [j for j, (a, b) in enumerate(zip(parts0, parts1)) if a != b]
    if len(parts0) != len(parts1) or len(differ) != 1 or (parts0[differ[0]], parts1[differ[0]]) != ("0", "1"):
        return None
    parts1[differ[0]] = str(layer)
    return "".join(parts1)


def _name(node, spec, layer: int, path, prefix: str) -> str:
    """torch.export's placeholder name: ``p_model_layers_5_mlp_up_proj_weight``,
    ``past_key_values_5_key``."""
    if layer < 2:
        return node.name
    if spec.kind.name == "USER_INPUT":
        return "_".join(re.sub(r"[^a-zA-Z0-9]", "_", str(getattr(k, "key", getattr(k, "name", getattr(k, "idx", "")))))
                        for k in path[1:])
    one = re.sub(r"[^a-zA-Z0-9]", "_", f"{prefix}.1.")
    return node.name.replace(one, re.sub(r"[^a-zA-Z0-9]", "_", f"{prefix}.{layer}."), 1)


def _layer_arg(arg, layer: int, template: LayerTemplate, copies: dict, per_layer: dict, env: dict):
    """What layer ``layer``'s copy of a layer 1 node reads for its argument ``arg``."""
    if arg in copies[layer]:
        return copies[layer][arg]
    if (arg, layer) in per_layer:
        return per_layer[(arg, layer)]
    if arg in template.pairs:  # layer 0's node layer 1 reads: the previous layer's pair of it
        return copies[layer - 1][template.pairs[arg]]
    return env[arg]


def _rename_stack(node, prefix: str, layer: int) -> None:
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return
    pattern = re.compile(rf"^{re.escape(prefix)}\.1(?=\.|$)")
    node.meta = dict(node.meta)
    node.meta["nn_module_stack"] = {
        key: (pattern.sub(f"{prefix}.{layer}", str(path)), kind) for key, (path, kind) in stack.items()
    }


def _output(program, template: LayerTemplate, layers: int, graph, env: dict, copies: dict) -> None:
    out = next(n for n in reversed(program.graph.nodes) if n.op == "output")
    values = list(out.args[0])
    end = template.outputs1[-1] + 1 if template.outputs1 else len(values)
    new = [env[v] if v is not None else None for v in values[:end]]
    for i in range(2, layers):
        new += [copies[i][values[j]] for j in template.outputs1]
    new += [env[v] if v is not None else None for v in values[end:]]
    node = graph.output(type(out.args[0])(new))
    node.meta = copy.copy(out.meta)


def _program(program, graph, inputs, in_spec, kwargs, state, template, layers) -> Any:
    import torch
    from torch.export.graph_signature import ExportGraphSignature, OutputSpec, TensorArgument

    out = next(n for n in reversed(graph.nodes) if n.op == "output")
    kinds = {s.kind for s in program.graph_signature.output_specs}
    if {k.name for k in kinds} != {"USER_OUTPUT"}:
        raise LayersDiffer(f"the program returns {sorted(k.name for k in kinds)}: only user outputs are copied.")
    outputs = [OutputSpec(kind=next(iter(kinds)), arg=TensorArgument(name=v.name), target=None)
               for v in out.args[0]]
    signature = ExportGraphSignature(input_specs=[s for _, s in inputs], output_specs=outputs)
    cache_k = _pytree_structure(program.example_inputs[1].get("past_key_values"))
    cache_n = _pytree_structure(kwargs.get("past_key_values"))
    out_spec = _replace_spec(program.call_spec.out_spec, cache_k, cache_n)
    calls = [dataclasses.replace(e, signature=dataclasses.replace(e.signature, in_spec=in_spec, out_spec=out_spec))
             if e.fqn == "" and e.signature is not None else e for e in program.module_call_graph]
    weights, constants = dict(program.state_dict), dict(program.constants)
    for _, spec in inputs:
        if spec.kind.name not in ("PARAMETER", "BUFFER") or spec.target in weights or spec.target in constants:
            continue
        if spec.target not in state:
            raise LayersDiffer(f"the model has no tensor {spec.target!r} for the copied layer.")
        held = constants if spec.kind.name == "BUFFER" and spec.persistent is False else weights
        held[spec.target] = state[spec.target]
    return torch.export.ExportedProgram(
        root=program.graph_module, graph=graph, graph_signature=signature, state_dict=weights,
        range_constraints=program.range_constraints, module_call_graph=calls,
        example_inputs=((), kwargs), constants=constants, verifiers=program.verifiers,
    )


def _pytree_structure(value) -> Any:
    from torch.utils import _pytree

    return _pytree.tree_structure(value)


def _replace_spec(spec, old, new):
    """``spec`` with each subtree equal to ``old`` replaced by ``new``."""
    from torch.utils import _pytree

    if spec == old:
        return new
    if spec.is_leaf():
        return spec
    return _pytree.TreeSpec(spec.type, spec.context, [_replace_spec(c, old, new) for c in spec.children()])
