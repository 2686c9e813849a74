"""Complex values in the graph: carried as real pairs [..., 2] between converters.

What the plan refuses (a complex value only a real converter would touch) is reported here,
with the fix; a constant or weight that is complex becomes its pairs. A complex model input
or output is its pairs too: a complex64 tensor of shape ``s`` is the float32 graph input or
output of shape ``s + (2,)`` (``torch.view_as_real``), with the name it would have had; the
model's ``pkg.tonnx.complex_inputs``/``pkg.tonnx.complex_outputs`` metadata lists those names.
"""

from __future__ import annotations

from collections import Counter

from tonnx._errors import UnsupportedError


def pairs(value):
    """A complex tensor as its real pairs [..., 2] (how complex values live in the graph)."""
    if getattr(value, "is_complex", None) is not None and value.is_complex():
        import torch

        return torch.view_as_real(value.detach().resolve_conj())
    return value


#: metadata keys listing the graph inputs and outputs that hold complex values as pairs
METADATA = {"input": "pkg.tonnx.complex_inputs", "output": "pkg.tonnx.complex_outputs"}


def is_complex_value(value) -> bool:
    """Whether an FX node's torch value is a complex tensor."""
    val = getattr(value, "meta", {}).get("val")
    return getattr(val, "dtype", None) is not None and val.dtype.is_complex


def record_pairs(g, kind: str, name: str, dtype) -> None:
    """Notes in the model's metadata that graph ``kind`` (input/output) ``name`` holds the
    pairs [..., 2] of a ``dtype`` (complex32 has no pair type: refused, with the fix)."""
    import torch

    if dtype == torch.complex32:
        raise UnsupportedError(
            f"Model {kind} {name!r} is complex32: tonnx carries complex64 and complex128 "
            f"only. Convert it with .to(torch.complex64)."
        )
    key = METADATA[kind]
    g.metadata_props[key] = ", ".join(filter(None, [g.metadata_props.get(key), name]))


def has_complex32(values) -> bool:
    import torch

    return any(v.dtype == torch.complex32 for v in values)


def complex_role(node) -> str:
    """'input' when a tensor argument of ``node`` is complex, else 'result'."""
    for a in node.all_input_nodes:
        if getattr(a.meta.get("val"), "dtype", None) is not None and a.meta["val"].dtype.is_complex:
            return "input"
    return "result"


def complex_size_args(node, args: list, key: str) -> list:
    """``sym_size(x, dim)`` of a complex ``x``: a negative dim counts from torch's last
    axis, before the pair axis of its [..., 2] tensor."""
    import torch

    if node.target is not torch.ops.aten.sym_size.int:
        raise UnsupportedError(f"complex input not supported by {key} ({node.format_node()}).")
    x, dim = args
    return [x, dim % node.args[0].meta["val"].dim()]


def complex_error(refused: Counter) -> UnsupportedError:
    lines = [
        f"complex {role} not supported by {key} ({count} node{'s' if count > 1 else ''})"
        for (key, role), count in sorted(refused.items())
    ]
    return UnsupportedError(
        "\n".join(lines) + "\ntonnx carries complex values between converters as real "
        "tensors [..., 2] and converts an op touching one only with a converter registered "
        "with complex=True (complex64 and complex128; complex32 is not supported). Fix: keep "
        "this computation real (torch.view_as_real / torch.view_as_complex around it), or "
        "register a converter with tonnx.Converter(key, function, complex=True)."
    )
