"""Complex values in the graph: carried as real pairs [..., 2] between converters.

What the plan refuses (a complex value only a real converter would touch) is reported here,
with the fix; a constant or weight that is complex becomes its pairs.
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
