"""``dynamic_shapes`` as users write it (Dims or strings) -> torch.export's form + names.

Strings (``{0: "batch"}``) become ``Dim.DYNAMIC`` for torch.export and the name is kept
to rename torch's symbol (``s77``) in the ONNX shapes; ``Dim("batch")`` keeps its name.
A single ``{axis: name}`` dict given for a container input (a list of tensors, a cache)
applies to every tensor in it. A name is an assertion that the dimensions bearing it are
equal: examples that disagree are refused, never declared under one name.
"""

from __future__ import annotations

import inspect
from typing import Any

from tonnx._errors import DynamicShapesError


def _is_tensor(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _dim_name(d) -> str | None:
    if isinstance(d, str):
        return d
    name = getattr(d, "__name__", None)
    if name and type(d).__name__ not in ("_DimHint", "_DimHintType", "DimHint"):
        return name
    return None


def _dynamic_hint(d) -> bool:
    """``Dim.DYNAMIC`` (or ``Dim.DYNAMIC(min=..)``): dynamic, no name; ``AUTO`` may be static."""
    return getattr(getattr(d, "type", None), "name", None) == "DYNAMIC"


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
        if isinstance(d, str) and not d.strip():
            raise DynamicShapesError(
                f"dynamic_shapes{path}: axis {axis} is named {d!r}; a dimension name must not "
                f"be empty. Give it a name ({{{axis}: 'batch'}}) or torch.export.Dim.DYNAMIC."
            )
        name = _dim_name(d)
        if name is not None or _dynamic_hint(d):  # unnamed: only to say which axis failed
            named.append((tensor, axis % tensor.dim(), name, path, isinstance(d, str)))
        out[axis] = torch.export.Dim.DYNAMIC if isinstance(d, str) else d
    return out


def _is_axis_dict(spec) -> bool:
    return isinstance(spec, dict) and bool(spec) and all(isinstance(k, int) for k in spec)


def _pytree_children(arg) -> list | None:
    """One level of a registered pytree node (a cache...), None for anything else."""
    import torch

    node = torch.utils._pytree.SUPPORTED_NODES.get(type(arg))
    if node is None or isinstance(arg, (dict, list, tuple)):
        return None
    return list(node.flatten_fn(arg)[0])


def _walk(arg, spec, path: str, named: list):
    if _is_tensor(arg):
        return _per_tensor(spec, arg, path, named)
    children = _pytree_children(arg)
    if spec is None:
        # torch.export wants a registered node's structure even when nothing in it is dynamic
        return None if children is None else [_walk(a, None, path, named) for a in children]
    if _is_axis_dict(spec) and (children is not None or isinstance(arg, (list, tuple))):
        items = children if children is not None else arg
        start = len(named)
        # one {axis: name} for the whole container: the same spec for every tensor in it
        out = [_walk(a, spec, f"{path}[{i}]", named) for i, a in enumerate(items)]
        if children is None:
            return type(arg)(out)
        _in_cache(named, start)
        return out
    if children is not None:
        if not isinstance(spec, (list, tuple)) or len(spec) != len(children):
            raise DynamicShapesError(
                f"dynamic_shapes{path}: the input is a {type(arg).__name__} flattened into "
                f"{len(children)} items; give one {{axis: name}} dict for all of them or a "
                f"list of {len(children)} specs, got {spec!r}."
            )
        start = len(named)
        out = [_walk(a, s, f"{path}[{i}]", named) for i, (a, s) in enumerate(zip(children, spec))]
        _in_cache(named, start)
        return out
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


def _in_cache(named: list, start: int) -> None:
    """Marks the names given by string inside a registered pytree node (a KV cache)."""
    named[start:] = [(t, a, n, p, "cache" if k else k) for t, a, n, p, k in named[start:]]


def _check_names_agree(named: list) -> None:
    """One name, one size: a name shared by dimensions of different example sizes is refused."""
    sizes: dict[str, dict[int, str]] = {}
    for tensor, axis, name, path, _ in named:
        if name is None:
            continue
        sizes.setdefault(name, {}).setdefault(int(tensor.shape[axis]), f"{path} axis {axis}")
    for name, by_size in sizes.items():
        if len(by_size) > 1:
            where = ", ".join(f"{p} has {n}" for n, p in by_size.items())
            raise DynamicShapesError(
                f"dynamic_shapes names two dimensions {name!r} but the example inputs give "
                f"them different sizes ({where}). A name declares the dimensions equal in the "
                f"ONNX model; give each dimension its own name."
            )


def convert(model, args: tuple, kwargs: dict, dynamic_shapes) -> tuple[Any, list]:
    """(spec for torch.export, [(tensor, axis, name, path, kind)]) from the user's
    ``dynamic_shapes``: every axis declared dynamic, named or not (name None).

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
    _check_names_agree(named)
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
    """torch's symbol name (``s77``) -> the user's dimension name (``batch``).

    A named dimension torch.export made static is refused: the ONNX model would accept one
    size only where the user asked for any.
    """
    if not named:
        return {}
    import torch

    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    positions = {id(t): i for i, t in enumerate(leaves) if _is_tensor(t)}
    user_inputs = _user_inputs(ep)
    names: dict[str, str] = {}
    given: dict[str, str] = {}  # symbol -> where its name was first given
    for tensor, axis, name, path, kind in named:
        index = positions.get(id(tensor))
        if name is None or index is None or index >= len(user_inputs):
            continue
        val = user_inputs[index].meta.get("val")
        d = val.shape[axis] if val is not None else None
        if type(d) is int:
            raise DynamicShapesError(
                f"dynamic_shapes{path} names axis {axis} {name!r}, but torch.export made it "
                f"static (size {d}): "
                + (
                    "torch.export specializes example sizes 0 and 1; use an example of size 2 "
                    "or more."
                    if d in (0, 1)
                    else "the model's code depends on its value (for example a check or a "
                    "reshape to a fixed size)."
                )
            )
        if d is not None and d.node.expr.is_Symbol:
            if kind == "cache":
                _check_not_bounded(ep, d.node.expr, name, path, axis)
            _check_one_name(names, given, d.node.expr.name, name, f"{path} axis {axis}")
    return names


def _check_one_name(names: dict, given: dict, symbol: str, name: str, where: str) -> None:
    """Records ``symbol`` -> ``name``; two names for one dimension are refused: torch.export
    found them equal (the code requires it, ``x + y``), so one of them would be dropped."""
    first = names.setdefault(symbol, name)
    given.setdefault(symbol, where)
    if first != name:
        raise DynamicShapesError(
            f"dynamic_shapes names one dimension twice: {given[symbol]} is {first!r} and "
            f"{where} is {name!r}, but torch.export found them equal (the model's code "
            f"requires it, e.g. x + y). Give both the same name ({first!r})."
        )


def _check_not_bounded(ep, symbol, name: str, path: str, axis: int) -> None:
    """A cache length named by a string must take any size: a cap torch.export put on it
    while tracing is refused.

    torch.export narrows a ``Dim.DYNAMIC`` silently when the code branches on it (a sliding
    window layer: ``past >= window``): the model would be wrong beyond the cap, and its
    presents declared of the cap's length. (For plain tensors torch's ranges are kept in the
    model's metadata: a cap there usually comes from indexing, which torch refuses beyond.)
    """
    bounds = ep.range_constraints.get(symbol)
    if bounds is None:
        return
    upper = bounds.upper
    if not (isinstance(upper, int) or getattr(upper, "is_Integer", False)):
        return  # unbounded (int_oo)
    upper = int(upper)
    raise DynamicShapesError(
        f"dynamic_shapes{path} names axis {axis} {name!r}, but torch.export traced the model for "
        f"{name} in [{bounds.lower}, {upper}] only: the model's code branches on its value (for "
        f"example a sliding window), and the exported graph would be wrong beyond {upper}. "
        f"Give Dim({name!r}, max={upper}) to accept that range, or change what the code "
        f"branches on (for a KV cache: build it from (key, value) pairs with no sliding-window "
        f"layer; docs/llm-export.md)."
    )


def _user_inputs(ep) -> list:
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    return [
        node
        for node, spec in zip(placeholders, ep.graph_signature.input_specs)
        if spec.kind.name == "USER_INPUT"
    ]


def program_symbol_names(ep, args: tuple, kwargs: dict, dynamic_shapes) -> dict[str, str]:
    """Names for the dimensions of an ExportedProgram, from ``dynamic_shapes`` given with it.

    The program's shapes are fixed already: ``dynamic_shapes`` can only name dimensions that
    are dynamic in it, and ``args``/``kwargs`` (default: the program's example inputs) only
    say which tensor each entry refers to.
    """
    import torch

    if not args and not kwargs:
        if ep.example_inputs is None:
            raise DynamicShapesError(
                "to_onnx(ExportedProgram, dynamic_shapes=...) needs the example inputs the "
                "program was exported with (args/kwargs): this program does not keep them."
            )
        args, kwargs = ep.example_inputs
    tree = torch.utils._pytree
    if tree.tree_structure((tuple(args), dict(kwargs))) != ep.call_spec.in_spec:
        raise DynamicShapesError(
            "The args/kwargs given with the ExportedProgram do not have the structure it was "
            f"exported with ({ep.call_spec.in_spec}); pass the same kinds of inputs."
        )
    values = [*args, *kwargs.values()]
    if isinstance(dynamic_shapes, dict) and not args:
        specs = [dynamic_shapes.get(k) for k in kwargs]
        unknown = set(dynamic_shapes) - set(kwargs)
    elif isinstance(dynamic_shapes, (list, tuple)) and len(dynamic_shapes) == len(values):
        specs, unknown = list(dynamic_shapes), set()
    else:
        raise DynamicShapesError(
            "With an ExportedProgram, dynamic_shapes only names its dynamic dimensions: give a "
            f"tuple with one entry per input ({len(values)}), or a dict keyed by the keyword "
            f"inputs when there are no positional ones; got {dynamic_shapes!r}."
        )
    if unknown:
        raise DynamicShapesError(f"dynamic_shapes names {sorted(unknown)}, which are not inputs.")
    named: list = []
    for i, (value, spec) in enumerate(zip(values, specs)):
        _walk(value, spec, f"[{i}]", named)
    _check_names_agree(named)
    try:
        return symbol_names(ep, tuple(args), dict(kwargs), named)
    except DynamicShapesError as e:
        raise DynamicShapesError(
            f"{e} The ExportedProgram is already traced: export it again with this dimension "
            f"dynamic to change that."
        ) from None
