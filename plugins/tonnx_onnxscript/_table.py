"""The pack's converter table, computed from onnxscript's torchlib registry when loaded.

One ``tonnx.Converter`` per op key torchlib registers a real-valued function for, in the
``aten`` and ``prims`` namespaces. torchlib names a default overload without suffix
(``aten::relu``); tonnx's key for it is ``aten::relu.default`` (``aten::relu`` would be
every overload). In-place variants (``aten::add_.Tensor``) use the functional function, as in
the aten pack; a few ops torchlib lacks map onto one it has (``_aliases.py``). Ops in
:data:`EXCLUDED` are left out, each with the reason.
"""

from __future__ import annotations

from tonnx import Converter

from ._aliases import ALIASES
from ._converter import AliasConverter, TorchlibConverter
from ._refusals import REFUSALS

NAMESPACES = ("aten", "prims")

#: torchlib functions that give other numbers than torch, or cannot work through tonnx:
#: key -> reason. A missing op is an error the user sees; a wrong number is not. Ops wrong
#: only for some arguments refuse those calls instead (``_refusals.py``).
EXCLUDED: dict[str, str] = {
    "aten::scaled_dot_product_attention.default": (
        "rows whose keys are all masked out (left padding) give the mean of the values; torch "
        "gives zeros (measured on a padded Llama batch)"
    ),
    "aten::special_erfcx.default": (
        "computed as exp(x**2) * (1 - erf(x)): 1 - erf(x) cancels to 0 in float32 from x ~ 4 "
        "(torch: 0.14)"
    ),
}


def tonnx_key(name: str) -> str:
    """torchlib's ``aten::relu`` / ``aten::add.Tensor`` as a tonnx key."""
    return name if "." in name.partition("::")[2] else f"{name}.default"


def torchlib_functions() -> dict[str, object]:
    """tonnx key -> torchlib function, for every real-valued function torchlib registers."""
    from onnxscript.function_libs.torch_lib import ops, registration

    del ops  # importing the ops fills torchlib's registry
    found = {}
    for name, overloaded in registration.default_registry.items():
        if name.partition("::")[0] not in NAMESPACES or not overloaded.overloads:
            continue
        found[tonnx_key(name)] = overloaded.overloads[0]
    return found


def inplace_keys(functions: dict[str, object]) -> dict[str, str]:
    """``aten::add_.Tensor`` -> ``aten::add.Tensor`` for every in-place variant torch has of
    a functional op torchlib converts (the interpreter rebinds the mutated input)."""
    import torch

    found = {}
    for key in functions:
        ns, _, rest = key.partition("::")
        name, _, overload = rest.partition(".")
        if ns != "aten" or name.endswith("_"):
            continue
        packet = getattr(torch.ops.aten, f"{name}_", None)
        inplace = f"aten::{name}_.{overload}"
        if packet is not None and overload in packet.overloads() and inplace not in functions:
            found[inplace] = key
    return found


def converters() -> list[Converter]:
    functions = {k: f for k, f in torchlib_functions().items() if k not in EXCLUDED}
    keys = {key: key for key in functions}
    keys.update(inplace_keys(functions))
    table = {
        key: TorchlibConverter(key, functions[functional], REFUSALS.get(functional))
        for key, functional in keys.items()
    }
    for key, (target, alias) in ALIASES.items():
        if key not in table and target in table:
            table[key] = AliasConverter(key, alias, table[target])
    return [Converter(key, function) for key, function in sorted(table.items())]
