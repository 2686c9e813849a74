"""The builder's three basic passes, each one linear sweep over the nodes."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tonnx.builder import _constants, _folding

# Exact ops that only move or reinterpret data: worth folding on a weight of any size
# when nothing else reads the original, since ONNX runtimes would do it at every load.
_LAYOUT_OPS = frozenset({"Transpose", "Reshape", "Unsqueeze", "Squeeze", "Identity", "Cast"})


def remove_identity_nodes(g) -> int:
    """Removes Identity nodes, renaming their input or output away."""
    outputs = set(g.outputs)
    produced = {o for node in g.nodes for o in node.outputs}
    rename: dict[str, str] = {}
    kept = []
    for node in g.nodes:
        if node.op_type != "Identity" or node.domain:
            kept.append(node)
            continue
        src, dst = _find(rename, node.inputs[0]), node.outputs[0]
        if dst not in outputs:
            rename[dst] = src
        elif src in produced and src not in outputs:
            rename[src] = dst
        else:
            kept.append(node)
    if len(kept) == len(g.nodes):
        return 0
    removed = len(g.nodes) - len(kept)
    g.nodes = kept
    _apply_renames(g, rename)
    return removed


def _find(rename: dict[str, str], name: str) -> str:
    while name in rename:
        name = rename[name]
    return name


def _apply_renames(g, rename: dict[str, str]) -> None:
    for node in g.nodes:
        inputs = node.inputs
        for i, name in enumerate(inputs):
            if name in rename:
                inputs[i] = _find(rename, name)
        outputs = node.outputs
        for i, name in enumerate(outputs):
            if name in rename:
                new = _find(rename, name)
                outputs[i] = new
                _move_info(g, name, new)
        for sub in node.subgraphs():
            _apply_renames(sub, rename)
            sub.outputs = [_find(rename, o) for o in sub.outputs]


def _move_info(g, old: str, new: str) -> None:
    if old in g.types and new not in g.types:
        g.types[new] = g.types[old]
    if old in g.shapes and new not in g.shapes:
        g.shapes[new] = g.shapes[old]


def _names_read(g, into: set[str]) -> set[str]:
    """Every name read by a node of ``g`` or of its subgraphs (outer-scope reads)."""
    for node in g.nodes:
        into.update(node.inputs)
        for sub in node.subgraphs():
            into.update(sub.outputs)
            _names_read(sub, into)
    return into


def remove_unused(g) -> int:
    """Removes the nodes and constants that no graph output depends on."""
    needed = set(g.outputs)
    kept = []
    for node in reversed(g.nodes):
        if any(o in needed for o in node.outputs if o):
            kept.append(node)
            needed.update(node.inputs)
            for sub in node.subgraphs():
                remove_unused(sub)
                needed.update(sub.outputs)
                _names_read(sub, needed)
    kept.reverse()
    removed = len(g.nodes) - len(kept)
    g.nodes = kept
    for name in [c for c in g.constants if c not in needed]:
        del g.constants[name]
        removed += 1
    return removed


def constant_folding(g) -> int:
    """Folds nodes whose inputs are constants, large ones only when they are layout ops."""
    consumers = Counter(_all_reads(g))
    outputs = set(g.outputs)
    kept, folded = [], 0
    for node in g.nodes:
        if node.domain or not _folding.foldable_op(node.op_type) or not _foldable(g, node, consumers):
            kept.append(node)
            continue
        # layout ops on weights may be large (their input is dropped); others stay small
        limit = 2**62 if node.op_type in _LAYOUT_OPS else _folding.EAGER_MAX_ELEMENTS
        values = _folding.fold(g, node.op_type, node.inputs, node.attributes, limit)
        if values is None:
            kept.append(node)
            continue
        for out, value in zip(node.outputs, values):
            if out in outputs:
                continue
            g.constants[out] = value
            g.types[out] = _constants.elem_type(value)
            g.shapes[out] = tuple(value.shape)
        if any(o in outputs for o in node.outputs):
            kept.append(node)
        else:
            folded += 1
    g.nodes = kept
    return folded


def _all_reads(g) -> list[str]:
    reads = []
    for node in g.nodes:
        reads.extend(node.inputs)
        for sub in node.subgraphs():
            reads.extend(_all_reads(sub))
            reads.extend(sub.outputs)
    return reads


def _foldable(g, node, consumers: Counter) -> bool:
    if _folding.can_fold(g, node.op_type, node.inputs):
        return True
    if node.op_type not in _LAYOUT_OPS or not node.inputs[0]:
        return False
    data = node.inputs[0]
    if not g.is_constant(data) or consumers[data] != 1:
        return False
    return all(g.is_constant(i) for i in node.inputs[1:] if i)


def derive_weight_transposes(g) -> int:
    """Transposes of weights not in memory (a ``meta`` tensor streamed from a checkpoint as
    the file is written) become initializers derived at write time, stored transposed.

    Left as nodes, a runtime transposes them at every load: onnxruntime-genai opened a
    1 B float32 Llama folder in 40-41 s with them, 17-25 s with the weights stored as the
    MatMuls read them (warm page cache; the builder's folder, stored alike, 17-22 s). Run after the packs'
    rewrites, which match ``MatMul(x, Transpose(W))``. A weight read elsewhere too (a tied
    embedding) keeps its node: one copy of it in the file."""
    from tonnx.builder._derived import derive

    consumers = Counter(_all_reads(g))
    outputs = set(g.outputs)
    rename: dict[str, str] = {}
    kept = []
    for node in g.nodes:
        weight = node.inputs[0] if node.op_type == "Transpose" and not node.domain else None
        value = g.constants.get(weight) if weight else None
        if value is None or _constants.has_data(value) or consumers[weight] != 1 or node.outputs[0] in outputs:
            kept.append(node)
            continue
        perm = node.attributes.get("perm") or list(range(len(value.shape)))[::-1]
        shape = tuple(value.shape[p] for p in perm)
        name = g.unique_name(f"{weight}.transposed")
        rename[node.outputs[0]] = derive(g, [weight], _transposer(tuple(perm)), shape, value.dtype, name)
    if rename:
        g.nodes = kept
        _apply_renames(g, rename)
        remove_unused(g)
    return len(rename)


def _transposer(perm: tuple[int, ...]):
    def transposed(weight: np.ndarray) -> np.ndarray:
        # a view: the file writer puts it in C order as it writes it (sinks.place)
        return np.transpose(weight, perm)

    return transposed
