"""Why a converter key names nothing an exported graph can hold, with a did-you-mean.

A key that matches no FX node leaves its converter silently unused, the one failure a
user cannot see: an op typo (``aten::rleu``), a bare name (``relu``), or a torch function
(``torch.relu``), which torch.export records as the aten ops it calls, never as itself.
"""

from __future__ import annotations

import difflib
import importlib

from tonnx.dispatch._converter import target_key


def key_problem(key: str, target=None) -> str | None:
    """Why ``key`` names no op and no Python callable found in FX graphs (None when it does).

    ``target``: the callable the key was made from, when it was given as one."""
    if "::" in key:
        return _op_problem(key)
    return _callable_problem(key, target if callable(target) else None)


def _op_problem(key: str) -> str | None:
    import torch

    ns, _, rest = key.partition("::")
    name, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, ns, None), name, None) if name else None
    if packet is None:
        return f"torch.ops.{ns}.{name} does not exist{_did_you_mean(name, ns)}"
    if overload and overload not in packet.overloads():
        names = ", ".join(sorted(packet.overloads())[:8])
        return f"{ns}::{name} has no overload {overload!r} (it has: {names})"
    return None


def _callable_problem(key: str, found=None) -> str | None:
    found = found if found is not None else _resolve(key)
    last = key.rpartition(".")[2]
    if found is None:
        return f"{key!r} names no op (keys look like 'aten::relu.default') and no Python callable{_did_you_mean(last)}"
    if _is_torch_function(found):
        return (
            f"{key!r} is a torch function: torch.export records the aten ops it calls, never "
            f"the function itself{_did_you_mean(last)}"
        )
    actual = target_key(found)
    if actual != key:
        return f"{key!r} resolves to {found!r}, which FX graphs name {actual!r}"
    return None


def _resolve(key: str):
    """The object a dotted ``module.qualname`` names, None when there is none."""
    parts = key.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # any import failure means: not this prefix
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj if callable(obj) else None
    return None


def _is_torch_function(obj) -> bool:
    """torch's public tensor functions (``torch.relu``, ``F.relu``, ``Tensor.relu``); not
    the symbolic-size ones (``torch.sym_max``) torch.export does record."""
    import torch

    if getattr(obj, "__name__", "").startswith(("sym_", "_sym_")):
        return False
    try:
        return any(obj in functions for functions in torch.overrides.get_overridable_functions().values())
    except TypeError:  # an unhashable callable is no torch function
        return False


def _did_you_mean(name: str, ns: str = "") -> str:
    """``" (did you mean 'aten::relu.default'?)"`` from torch's registered ops, or ''."""
    import torch

    ops: dict[str, str] = {}  # op name -> namespace (aten first, then the key's own)
    for full in torch._C._dispatch_get_all_op_names():
        op_ns, _, rest = full.partition("::")
        if ns and op_ns != ns:
            continue
        op = rest.partition(".")[0]
        if ops.get(op) != "aten":
            ops[op] = op_ns
    close = difflib.get_close_matches(name.lower(), list(ops), n=3, cutoff=0.75)
    if not close:
        return ""
    spelled = " or ".join(repr(_spelling(ops[op], op)) for op in close)
    return f" (did you mean {spelled}?)"


def _spelling(ns: str, op: str) -> str:
    """The op's default overload when it has one (``aten::relu.default``), else its packet."""
    import torch

    packet = getattr(getattr(torch.ops, ns, None), op, None)
    if packet is not None and "default" in packet.overloads():
        return f"{ns}::{op}.default"
    return f"{ns}::{op}"


def check_op_key(key: str) -> str | None:
    """Why ``key`` names no registered torch op (None when it does, or is not an op key),
    with a did-you-mean. (A key of a Python callable is checked with the callable itself
    when the Dispatcher is made.)

    A typo in an in-house converter's key would otherwise leave it silently unused.
    """
    if "::" not in key:
        return None
    return key_problem(key)
