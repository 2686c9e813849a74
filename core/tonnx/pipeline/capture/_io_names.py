"""Default ONNX input and output names, read off the pytree paths of the model's inputs/outputs.

A tensor nested in a structure is named by its path: ``past_key_values.0.key`` for a cache
input, ``logits`` and ``present.0.key`` for the fields of a ``ModelOutput`` (the names optimum
and onnxruntime-genai use, whether the model calls its cache ``past_key_values`` or
``cache``; a cache output is ``present``, an encoder-decoder cache's layers
are ``.decoder``/``.encoder``). Top-level tensors keep the name torch.export gave them (the
parameter name); outputs that are a bare tensor or a tuple keep the interpreter's names.
``input_names``/``output_names`` given by the user override these, position by position.
A default output name an input or a weight already has gets ``_output`` (``attention_mask``
returned beside an input of that name is ``attention_mask_output``); a clash the user chose
is refused.
"""

from __future__ import annotations

_CACHE_PARTS = {"self_attention": "decoder", "cross_attention": "encoder"}
#: What a cache argument or output field is called (newer model code says ``cache`` for
#: ``past_key_values``); the ONNX names stay the field's conventional ones.
_CACHE_ROOTS = ("past_key_values", "present_key_values", "cache")


def _part(key) -> str | None:
    from torch.utils._pytree import GetAttrKey, MappingKey, SequenceKey

    if isinstance(key, MappingKey):
        return str(key.key)
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, GetAttrKey):
        return key.name
    return None


def path_name(path, *, output: bool = False) -> str | None:
    """``("past_key_values", "self_attention", "0.key")`` -> ``past_key_values.0.decoder.key``."""
    parts = [_part(k) for k in path]
    if not parts or None in parts:
        return None
    if len(parts) == 3 and parts[1] in _CACHE_PARTS and "." in parts[2]:
        layer, kind = parts[2].split(".", 1)
        parts = [parts[0], layer, _CACHE_PARTS[parts[1]], kind]
    if len(parts) > 1 and parts[0] in _CACHE_ROOTS:
        parts[0] = "present" if output else "past_key_values"
    return ".".join(parts)


def default_input_names(ep) -> list[str | None]:
    """One entry per user input: a path name for a nested tensor, else None (torch's name)."""
    from torch.utils import _pytree

    if ep.example_inputs is None:
        return []
    try:
        leaves, spec = _pytree.tree_flatten_with_path(ep.example_inputs)
    except Exception:  # an input type not registered any more: keep torch's names
        return []
    if spec != ep.call_spec.in_spec:
        # registered differently since the export (another flatten order): names read off
        # these paths would label the program's inputs in the wrong order
        return []
    names: list[str | None] = []
    for path, _ in leaves:
        # path[0] selects args (0) or kwargs (1); a positional input's name is not in the path
        if len(path) > 2 and _part(path[0]) == "1":
            names.append(path_name(path[1:]))
        else:
            names.append(None)
    return names


def default_output_names(ep) -> list[str | None]:
    """One entry per user output: a path name for a field of a dict/ModelOutput, else None."""
    from torch.utils import _pytree
    from torch.utils._pytree import GetAttrKey, MappingKey

    out = next(n for n in reversed(ep.graph.nodes) if n.op == "output")
    specs = ep.graph_signature.output_specs
    values = [
        getattr(v, "meta", {}).get("val")
        for v, s in zip(out.args[0], specs)
        if s.kind.name == "USER_OUTPUT"
    ]
    try:
        tree = _pytree.tree_unflatten(values, ep.call_spec.out_spec)
        leaves, spec = _pytree.tree_flatten_with_path(tree)
    except Exception:  # an output type not registered any more: keep the graph's names
        return []
    if spec != ep.call_spec.out_spec:  # registered differently since the export, as above
        return []
    return [
        path_name(path, output=True) if path and isinstance(path[0], (MappingKey, GetAttrKey)) else None
        for path, _ in leaves
    ]


def merge(given, defaults: list[str | None], fallback: list[str]) -> list[str]:
    """The user's names first, then the defaults, then ``fallback`` (torch's names)."""
    given = list(given or [])
    if len(defaults) != len(fallback) or not any(defaults):
        return given
    names = [d or f for d, f in zip(defaults, fallback)]
    merged = given + names[len(given):]
    # a default that collides with a name the user chose keeps torch's name
    return given + [
        n if n not in given else f for n, f in zip(merged[len(given):], fallback[len(given):])
    ]


def check_names(which: str, names) -> None:
    """``input_names``/``output_names`` as given: None or a list of distinct non-empty strs.

    A str is refused rather than read letter by letter (``"features"`` is not 8 names).
    """
    from tonnx._errors import TonnxError

    if names is None:
        return
    if isinstance(names, str):
        raise TonnxError(f"{which}={names!r} is a string; give a list of names: {which}=[{names!r}].")
    if not isinstance(names, (list, tuple)):
        raise TonnxError(f"{which}={names!r}: give a list of names, e.g. {which}=['x'].")
    bad = [n for n in names if type(n) is not str or not n]
    if bad:
        raise TonnxError(f"{which}: every name must be a non-empty string, got {bad[0]!r}.")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TonnxError(f"{which}: {twice} given more than once; ONNX names are unique.")


def io_names(ep, input_names, output_names) -> tuple[list[str], list[str]]:
    """(input names, output names) for the interpreter: the user's, completed by the defaults."""
    check_names("input_names", input_names)
    check_names("output_names", output_names)
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    user = [
        p.name
        for p, s in zip(placeholders, ep.graph_signature.input_specs)
        if s.kind.name == "USER_INPUT"
    ]
    inputs = merge(input_names, default_input_names(ep), user)
    defaults = default_output_names(ep)
    outputs = merge(output_names, defaults, [""] * len(defaults))
    weights = [s.target for s in ep.graph_signature.input_specs if s.kind.name != "USER_INPUT"]
    taken = {*inputs, *user, *(w for w in weights if isinstance(w, str))}
    return inputs, unique_defaults(outputs, len(output_names or []), taken)


def unique_defaults(outputs: list[str], given: int, taken: set[str]) -> list[str]:
    """``outputs`` with each name tonnx chose (after the ``given`` first, the user's) made
    unique against ``taken`` (the inputs' and weights' names): ``attention_mask`` becomes
    ``attention_mask_output`` for a ModelOutput field named as an input. A name the user
    gave is kept; one that clashes is refused later, with the fix."""
    used = taken | set(outputs)
    unique = list(outputs[:given])
    for name in outputs[given:]:
        if name and name in taken:
            candidate, k = f"{name}_output", 1
            while candidate in used:
                candidate, k = f"{name}_output_{k}", k + 1
            used.add(candidate)
            name = candidate
        unique.append(name)
    return unique
