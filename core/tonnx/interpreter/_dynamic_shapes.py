"""``dynamic_shapes`` as users write it (Dims or strings) -> torch.export's form + names.

Strings (``{0: "batch"}``) become ``Dim.DYNAMIC`` for torch.export and the name is kept
to rename torch's symbol (``s77``) in the ONNX shapes; ``Dim("batch")`` keeps its name.
"""

from __future__ import annotations

import inspect
from typing import Any

from .._errors import DynamicShapesError


def _is_tensor(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _dim_name(d) -> str | None:
    if isinstance(d, str):
        return d
    name = getattr(d, "__name__", None)
    if name and type(d).__name__ not in ("_DimHint", "_DimHintType", "DimHint"):
        return name
    return None


def _per_tensor(spec, tensor, path: str, named: list):
    """Converts one tensor's spec, recording (tensor, axis, name) for each named axis."""
    import torch

    if spec is None:
        return None
    if isinstance(spec, dict):
        items = spec.items()
    elif isinstance(spec, (list, tuple)):
        items = enumerate(spec)
    else:
        raise DynamicShapesError(
            f"dynamic_shapes{path}: expected a dict {{axis: Dim or name}} or a list for a "
            f"tensor of shape {tuple(tensor.shape)}, got {spec!r}."
        )
    out = {} if isinstance(spec, dict) else [None] * len(spec)
    for axis, d in items:
        if not isinstance(axis, int) or not -tensor.dim() <= axis < tensor.dim():
            raise DynamicShapesError(
                f"dynamic_shapes{path}: axis {axis!r} does not exist in a tensor of rank "
                f"{tensor.dim()} (shape {tuple(tensor.shape)})."
            )
        if d is None:
            continue
        name = _dim_name(d)
        if name is not None:
            named.append((tensor, axis % tensor.dim(), name))
        out[axis] = torch.export.Dim.DYNAMIC if isinstance(d, str) else d
    return out


def _walk(arg, spec, path: str, named: list):
    if _is_tensor(arg):
        return _per_tensor(spec, arg, path, named)
    if spec is None:
        return None
    if isinstance(arg, dict):
        if not isinstance(spec, dict) or set(spec) - set(arg):
            raise DynamicShapesError(
                f"dynamic_shapes{path}: the input is a dict with keys {sorted(arg)}, "
                f"the spec is {spec!r}."
            )
        return {k: _walk(arg[k], spec.get(k), f"{path}[{k!r}]", named) for k in arg}
    if isinstance(arg, (list, tuple)):
        if not isinstance(spec, (list, tuple)) or len(spec) != len(arg):
            raise DynamicShapesError(
                f"dynamic_shapes{path}: the input is a {type(arg).__name__} of {len(arg)} "
                f"items, the spec is {spec!r}."
            )
        return type(spec)(_walk(a, s, f"{path}[{i}]", named) for i, (a, s) in enumerate(zip(arg, spec)))
    return spec


def convert(model, args: tuple, kwargs: dict, dynamic_shapes) -> tuple[Any, list]:
    """(spec for torch.export, [(tensor, axis, name)]) from the user's ``dynamic_shapes``.

    The spec is returned keyed by forward's parameter names, the form torch.export
    matches unambiguously (a ``*args`` parameter gets one entry per positional input).
    """
    named: list = []
    if dynamic_shapes is None:
        return None, named
    bound = _bind(model, args, kwargs)
    if not isinstance(dynamic_shapes, dict):
        dynamic_shapes = _by_parameter(bound, args, kwargs, dynamic_shapes)
    unknown = set(dynamic_shapes) - set(bound.arguments)
    if unknown:
        raise DynamicShapesError(
            f"dynamic_shapes names {sorted(unknown)}, which are not arguments of forward "
            f"(arguments: {list(bound.arguments)})."
        )
    spec = {
        k: _walk(v, dynamic_shapes.get(k), f"[{k!r}]", named) for k, v in bound.arguments.items()
    }
    return spec, named


def _bind(model, args: tuple, kwargs: dict):
    forward = getattr(model, "forward", model)
    try:
        return inspect.signature(forward).bind(*args, **kwargs)
    except TypeError as e:
        raise DynamicShapesError(f"Cannot match inputs to the signature of forward: {e}") from e


def _by_parameter(bound, args: tuple, kwargs: dict, dynamic_shapes) -> dict:
    """A tuple with one entry per input (positional, then keyword) -> a dict by parameter."""
    if not isinstance(dynamic_shapes, (list, tuple)) or len(dynamic_shapes) != len(args) + len(kwargs):
        raise DynamicShapesError(
            f"dynamic_shapes must be a dict keyed by argument name or a tuple with one entry "
            f"per input ({len(args) + len(kwargs)}), got {dynamic_shapes!r}."
        )
    positional = list(dynamic_shapes[: len(args)])
    by_keyword = dict(zip(kwargs, dynamic_shapes[len(args) :]))
    spec = {}
    params = bound.signature.parameters
    for name, value in bound.arguments.items():
        if params[name].kind is inspect.Parameter.VAR_POSITIONAL:
            spec[name] = tuple(positional[: len(value)])
            positional = positional[len(value) :]
        elif params[name].kind is inspect.Parameter.VAR_KEYWORD:
            spec[name] = {k: by_keyword[k] for k in value}
        elif name in by_keyword:
            spec[name] = by_keyword[name]
        else:
            spec[name] = positional.pop(0)
    return spec


def symbol_names(ep, args: tuple, kwargs: dict, named: list) -> dict[str, str]:
    """torch's symbol name (``s77``) -> the user's dimension name (``batch``)."""
    if not named:
        return {}
    import torch

    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    positions = {id(t): i for i, t in enumerate(leaves) if _is_tensor(t)}
    user_inputs = [
        node
        for node, spec in zip(
            [n for n in ep.graph.nodes if n.op == "placeholder"], ep.graph_signature.input_specs
        )
        if spec.kind.name == "USER_INPUT"
    ]
    names: dict[str, str] = {}
    for tensor, axis, name in named:
        index = positions.get(id(tensor))
        if index is None or index >= len(user_inputs):
            continue
        val = user_inputs[index].meta.get("val")
        d = val.shape[axis] if val is not None else None
        if d is not None and type(d) is not int and d.node.expr.is_Symbol:
            names.setdefault(d.node.expr.name, name)
    return names
