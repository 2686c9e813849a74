"""Two traced decoder layers -> the template every later layer is a copy of, or why not.

torch.export records, on each node, the modules it ran in (``nn_module_stack``). In a program
traced with the first two decoder layers, the nodes of layer 0 and of layer 1 are two
contiguous runs between the shared nodes before them (embedding, rotary tables, masks) and
after them (final norm, head). :func:`layer_template` pairs the two runs node by node and
accepts them only when they are the same computation: the same op with the same constant
arguments and the same shapes, each argument the paired node, a node shared by both (the
rotary tables, the mask), the layer's own weight (``layers.0.*`` / ``layers.1.*``), the
layer's own cache input (the same path in the inputs but the layer's index), or, for layer 1,
layer 0's result where layer 0 reads the embedding (the hidden state). Anything else (a
layer reading the sliding mask where the other reads the full one, a MoE block beside a dense
MLP) is a :class:`LayersDiffer` naming the first node that differs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tonnx import TonnxError


class LayersDiffer(TonnxError):
    """The traced layers are not copies of one another: the model is traced whole."""


@dataclass
class LayerTemplate:
    """What :mod:`.layer_replicate` needs to write layer ``i`` as a copy of layer 1."""

    #: the ModuleList's path, e.g. ``model.layers``
    prefix: str
    #: graph nodes before layer 0, of layer 0, of layer 1, after layer 1 (the output node excluded)
    before: list = field(default_factory=list)
    layer0: list = field(default_factory=list)
    layer1: list = field(default_factory=list)
    after: list = field(default_factory=list)
    #: layer 0 node -> its layer 1 pair
    pairs: dict = field(default_factory=dict)
    #: layer 1's own placeholders (weights, cache inputs) -> their layer 0 pair
    own_inputs: dict = field(default_factory=dict)
    #: positions in the output node's list of layer 0's and layer 1's results
    outputs0: list = field(default_factory=list)
    outputs1: list = field(default_factory=list)


def layer_of(node: Any, prefix: str) -> int | None:
    """The index of the decoder layer ``node`` ran in (``prefix.<i>`` in its module stack)."""
    pattern = re.compile(rf"{re.escape(prefix)}\.(\d+)(?:\.|$)")
    for path, _ in (node.meta.get("nn_module_stack") or {}).values():
        found = pattern.match(str(path))
        if found:
            return int(found.group(1))
    return None


def layer_template(program: Any, prefix: str) -> LayerTemplate:
    """The template of ``program`` (traced with two decoder layers under ``prefix``), or a
    :class:`LayersDiffer` saying why its two layers are not one computation."""
    template = _split(program, prefix)
    if len(template.layer0) != len(template.layer1):
        raise LayersDiffer(f"layer 0 has {len(template.layer0)} nodes, layer 1 {len(template.layer1)}.")
    template.pairs = dict(zip(template.layer0, template.layer1))
    kinds = {spec.arg.name: spec for spec in program.graph_signature.input_specs}
    for a, b in template.pairs.items():
        _check_pair(a, b, template, kinds)
    _check_uses(template)
    _check_outputs(program, template)
    return template


def _split(program: Any, prefix: str) -> LayerTemplate:
    """The nodes in four contiguous runs: before, layer 0, layer 1, after."""
    template = LayerTemplate(prefix=prefix)
    runs = [template.before, template.layer0, template.layer1, template.after]
    where = 0
    for node in program.graph.nodes:
        if node.op == "output":
            break
        layer = layer_of(node, prefix)
        want = 3 if layer is None and where >= 1 else (0 if layer is None else layer + 1)
        if want < where or want > 3 or (layer is not None and layer > 1):
            raise LayersDiffer(
                f"node {node.name} ({node.target}) of layer {layer} comes after the nodes of "
                f"{['the embedding', 'layer 0', 'layer 1', 'the head'][where]}: the layers are "
                f"not contiguous runs."
            )
        where = want
        runs[where].append(node)
    if not template.layer0 or not template.layer1:
        raise LayersDiffer(f"no node ran in {prefix}.0 or {prefix}.1 (nn_module_stack).")
    return template


def _check_pair(a: Any, b: Any, template: LayerTemplate, kinds: dict) -> None:
    if (a.op, a.target) != (b.op, b.target):
        raise LayersDiffer(f"layer 0's {a.name} is {a.target}, layer 1's {b.name} is {b.target}.")
    if _shape(a) != _shape(b):
        raise LayersDiffer(f"layer 0's {a.name} is {_shape(a)}, layer 1's {b.name} {_shape(b)}.")
    _same(a.args, b.args, a, b, template, kinds)
    _same(a.kwargs, b.kwargs, a, b, template, kinds)


def _shape(node: Any) -> str:
    value = node.meta.get("val")
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    return f"{dtype} {list(shape)}" if shape is not None else repr(value)


def _same(x: Any, y: Any, a: Any, b: Any, template: LayerTemplate, kinds: dict) -> None:
    """``x`` (an argument of layer 0's node ``a``) matches ``y`` (of layer 1's ``b``)."""
    import torch

    if isinstance(x, torch.fx.Node) and isinstance(y, torch.fx.Node):
        _same_node(x, y, a, b, template, kinds)
    elif isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)) and len(x) == len(y):
        for xi, yi in zip(x, y):
            _same(xi, yi, a, b, template, kinds)
    elif isinstance(x, dict) and isinstance(y, dict) and x.keys() == y.keys():
        for key in x:
            _same(x[key], y[key], a, b, template, kinds)
    elif type(x) is not type(y) or x != y:
        raise LayersDiffer(f"layer 0's {a.name} takes {x!r} where layer 1's {b.name} takes {y!r}.")


def _same_node(x: Any, y: Any, a: Any, b: Any, template: LayerTemplate, kinds: dict) -> None:
    if template.pairs.get(x) is y or x is y:
        return  # the paired node, or one both layers share
    if x in template.pairs or y in template.pairs.values():
        raise LayersDiffer(f"layer 0's {a.name} reads {x.name} where layer 1's {b.name} reads {y.name}.")
    if y in template.pairs and x in template.before:
        return  # the hidden state: the embedding for layer 0, layer 0's result for layer 1
    if x.op == y.op == "placeholder" and _own_input(x, y, template.prefix, kinds):
        previous = template.own_inputs.setdefault(y, x)
        if previous is x:
            return
    raise LayersDiffer(f"layer 0's {a.name} reads {x.name} where layer 1's {b.name} reads {y.name}.")


def _own_input(x: Any, y: Any, prefix: str, kinds: dict) -> bool:
    """``x`` and ``y`` are layer 0's and layer 1's weight, or their cache inputs."""
    sx, sy = kinds.get(x.name), kinds.get(y.name)
    if sx is None or sy is None or sx.kind != sy.kind:
        return False
    if sx.kind.name == "USER_INPUT":
        # used by its layer only: checked in _check_uses; its path is matched by layer_replicate
        return _shape(x) == _shape(y)
    return (isinstance(sx.target, str) and isinstance(sy.target, str)
            and sx.target.startswith(f"{prefix}.0.") and sy.target == f"{prefix}.1." + sx.target[len(prefix) + 3:])


def _check_uses(template: LayerTemplate) -> None:
    """Layer 1's own inputs serve layer 1 only; layer 0's nodes serve layer 0, layer 1 (the
    hidden state) and the outputs; nothing after the layers reads layer 0."""
    layer1 = set(template.layer1)
    for own in template.own_inputs:  # layer 0's may give the shared nodes a size (sym_size)
        if any(user not in layer1 for user in own.users):
            raise LayersDiffer(f"input {own.name} of layer 1 is read outside layer 1.")
    after = set(template.after)
    for node in template.layer0:
        if any(user in after for user in node.users):
            raise LayersDiffer(f"layer 0's {node.name} is read after the layers.")


def _check_outputs(program: Any, template: LayerTemplate) -> None:
    """Layer 1's results among the outputs are layer 0's, paired, right after them."""
    out = next(n for n in reversed(program.graph.nodes) if n.op == "output")
    values = list(out.args[0])
    layer0, layer1 = set(template.layer0), set(template.layer1)
    template.outputs0 = [i for i, v in enumerate(values) if v in layer0]
    template.outputs1 = [i for i, v in enumerate(values) if v in layer1]
    first, count = (template.outputs0 or [0])[0], len(template.outputs0)
    if (template.outputs0 != list(range(first, first + count))
            or template.outputs1 != list(range(first + count, first + 2 * count))
            or any(template.pairs[values[i]] is not values[i + count] for i in template.outputs0)):
        raise LayersDiffer("layer 1's results are not returned as layer 0's are, right after them.")
