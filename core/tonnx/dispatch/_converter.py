"""Converter: one record per converter function, keyed by the op's qualified name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Opset range meaning "every opset".
ALL_OPSETS = (1, 10_000)


@dataclass(frozen=True)
class Converter:
    """Registers ``function`` for the op ``target``.

    ``target`` is an op overload (``torch.ops.aten.add.Tensor`` or ``"aten::add.Tensor"``,
    ``"aten::relu.default"`` for a default overload), an overload packet
    (``torch.ops.aten.add`` or ``"aten::add"``: every overload), a custom op
    (``"mylib::my_op"``) or a Python callable found in FX graphs. It is turned into a key
    string once, here. ``opsets`` is the inclusive range of main-domain opsets the
    converter supports; ``applies`` an optional predicate on the FX node (a dtype, say);
    ``priority`` overrides the pack's priority for this converter only (a user's
    re-prioritisation of the pack shifts it by the same amount, keeping the pack's order).
    ``complex`` marks a converter of calls that read or make complex values, which the
    interpreter passes between converters as real tensors with a trailing dimension of 2
    (real, imaginary) in the matching float type; ``sts`` still gives torch's complex
    dtypes and shapes. A call touching a complex value is converted only by such a
    converter, any other call only by the others: no converter computes on the pair
    tensor by mistake.

    The function has the signature ``(g, sts, outputs, *args, **kwargs)`` and returns the
    name of its result, or a tuple of names, one per output the interpreter asked for.
    """

    target: Any
    function: Callable
    opsets: tuple[int, int] = ALL_OPSETS
    applies: Callable[[Any], bool] | None = None
    priority: int | None = None
    complex: bool = False

    @property
    def key(self) -> str:
        return target_key(self.target)

    @property
    def is_packet(self) -> bool:
        """True for a converter of every overload of an op (less specific)."""
        return is_packet_key(self.key)

    @property
    def qualified_name(self) -> str:
        fn = self.function
        return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


#: Namespaces of torch ops whose dotted spelling (``aten.add.Tensor``) is accepted too.
TORCH_NAMESPACES = ("aten", "prims")


def target_key(target: Any) -> str:
    """The key string of an op: ``aten::add.Tensor``, ``aten::add``, ``_operator.mul``.

    The spellings people type name the same key: ``aten.add.Tensor``,
    ``torch.ops.aten.add.Tensor`` and ``aten::add.Tensor``.
    """
    if isinstance(target, str):
        return normalize_key(target)
    overload = getattr(target, "_overloadname", None)
    schema = getattr(target, "_schema", None)
    if overload is not None and schema is not None:
        return f"{schema.name}.{overload}"
    qualified = getattr(target, "_qualified_op_name", None)
    if qualified is not None:
        return qualified
    module = getattr(target, "__module__", None) or type(target).__module__
    return f"{module}.{getattr(target, '__qualname__', getattr(target, '__name__', repr(target)))}"


def packet_key(key: str) -> str | None:
    """``aten::add`` for ``aten::add.Tensor``; None for a key that is not an overload."""
    if "::" not in key:
        return None
    ns, _, rest = key.partition("::")
    name, dot, _ = rest.partition(".")
    return f"{ns}::{name}" if dot else None


def is_packet_key(key: str) -> bool:
    return "::" in key and "." not in key.partition("::")[2]


def normalize_key(text: str) -> str:
    """``torch.ops.ns.op.overload`` / ``aten.op.overload`` -> ``ns::op.overload``."""
    text = text.strip()
    if "::" in text:
        return text
    if text.startswith("torch.ops."):
        ns, _, rest = text[len("torch.ops."):].partition(".")
        return f"{ns}::{rest}" if rest else text
    ns, _, rest = text.partition(".")
    if ns in TORCH_NAMESPACES and rest:
        return f"{ns}::{rest}"
    return text
