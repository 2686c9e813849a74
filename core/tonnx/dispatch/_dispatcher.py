"""Dispatcher: what the call site adds to the installed packs, as one immutable value."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tonnx._errors import TonnxError
from tonnx.dispatch import _config
from tonnx.dispatch._converter import Converter


class Dispatcher:
    """Call-site choices for one export, passed as ``to_onnx(..., dispatcher=...)``.

    - ``converters``: in-house converters, ``{target: function}`` or :class:`Converter`
      records; they win over every pack (priority rule 1).
    - ``fallback``: fallback packs to enable, in the order they are tried (``"onnxscript"``);
      they rank below every regular pack. The default dispatcher enables none, so an op
      without a converter is an error.
    - ``packs``: ``no:NAME`` / ``NAME`` / ``NAME=PRIORITY`` items, as in ``TONNX_PACKS``.
    - ``extra_packs``: pack objects (modules with hook implementations) used by the
      exports that name them, without installing them.
    - ``target_runtime``: the runtimes that will run the model and their versions
      (``{"onnxruntime": "1.31.1"}``), for packs whose output depends on them (a
      ``PackSpec.load_for_runtime``); a runtime not named is up to the pack (the ortcontrib
      pack targets the installed onnxruntime). Export here, run elsewhere.

    A dispatcher is an immutable value: two dispatchers with the same converters, packs
    and fallbacks are equal and share one cached registry; a different one can never be
    handed another's registry. A company's dispatcher is a subclass that fixes these
    choices in ``__init__`` (docs/dispatchers.md); :meth:`on_missing` decides what happens
    when no converter applies.
    """

    __slots__ = ("converters", "fallback", "packs", "extra_packs", "target_runtime", "_hash")

    def __init__(
        self,
        converters: Mapping[Any, Callable] | Iterable[Converter] = (),
        *,
        fallback: str | Sequence[str] = (),
        packs: Sequence[str] = (),
        extra_packs: Sequence[Any] = (),
        target_runtime: Mapping[str, str] | None = None,
    ):
        if isinstance(converters, Mapping):
            converters = [Converter(t, f) for t, f in converters.items()]
        converters = tuple(converters)
        for conv in converters:
            if not isinstance(conv, Converter) or not callable(conv.function):
                raise TonnxError(
                    f"Dispatcher converters must be Converter records or a mapping "
                    f"target -> function, got {conv!r}."
                )
            _check_callable_key(conv)
        fallback = (fallback,) if isinstance(fallback, str) else tuple(fallback)
        if isinstance(packs, str):
            raise TonnxError(f"Dispatcher(packs=...) takes a list of items, got the string {packs!r}.")
        _config.parse_items((*packs, *fallback), source="Dispatcher(packs=..., fallback=...)")
        _set = object.__setattr__
        _set(self, "converters", converters)
        _set(self, "fallback", fallback)
        _set(self, "packs", tuple(packs) + fallback)
        _set(self, "extra_packs", tuple(extra_packs))
        _set(self, "target_runtime", _runtimes(target_runtime))
        _set(self, "_hash", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Dispatcher is immutable; make a new one instead of setting {name!r}.")

    def _identity(self) -> tuple:
        # extra packs are modules or namespaces: compared by identity, which the
        # dispatcher keeps alive for as long as it (or a cache key holding it) lives
        return (type(self), self.converters, self.packs, tuple(id(p) for p in self.extra_packs),
                tuple(sorted(self.target_runtime.items())))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dispatcher):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        found = self._hash
        if found is None:
            found = hash(self._identity())
            object.__setattr__(self, "_hash", found)
        return found

    def on_missing(self, error: Exception) -> Exception:
        """The error raised when ops have no converter; a subclass may enrich it."""
        return error

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({len(self.converters)} converters, "
            f"fallback={list(self.fallback)}, packs={list(self.packs)}, "
            f"extra_packs={len(self.extra_packs)}"
            f"{f', target_runtime={dict(self.target_runtime)}' if self.target_runtime else ''})"
        )


def _runtimes(target_runtime: Mapping[str, str] | None) -> Mapping[str, str]:
    """``target_runtime`` checked (runtime name -> version string) and frozen."""
    from types import MappingProxyType

    found = dict(target_runtime) if isinstance(target_runtime, Mapping) else {}
    bad = {k: v for k, v in found.items() if not (isinstance(k, str) and isinstance(v, str) and v.strip())}
    if not isinstance(target_runtime, (Mapping, type(None))) or bad:
        raise TonnxError(
            f"Dispatcher(target_runtime=...) maps a runtime to a version string, as in "
            f"{{'onnxruntime': '1.31.1'}}; got {target_runtime!r}."
        )
    return MappingProxyType({k: v.strip() for k, v in found.items()})


def _check_callable_key(conv: Converter) -> None:
    """A key that is no op key (``relu``, ``torch.relu``) must name a Python callable FX
    graphs hold, or the converter would never be used. (Op keys are checked when the
    registry is built: a custom op may be registered after the dispatcher is made.)"""
    key = conv.key
    if "::" in key:
        return
    from tonnx.dispatch._key_check import key_problem

    problem = key_problem(key, conv.target)
    if problem:
        raise TonnxError(
            f"Dispatcher converter {conv.qualified_name} is registered for {key!r}, but "
            f"{problem}: it would never be used. Spell an op as 'aten::relu.default', "
            f"'aten.relu.default' or torch.ops.aten.relu.default (the in-place form "
            f"'aten::relu_.default' is covered by it too)."
        )


#: The default dispatcher: packs only, no fallback.
DEFAULT_DISPATCHER = Dispatcher()
