"""Dispatcher: what the call site adds to the packs (in-house converters, fallbacks)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._errors import TonnxError
from ._converter import Converter


class Dispatcher:
    """Call-site choices for one export, passed as ``to_onnx(..., dispatcher=...)``.

    - ``converters``: in-house converters, ``{target: function}`` or :class:`Converter`
      records; they win over every pack (priority rule 1).
    - ``fallback``: names of fallback packs to enable (``"onnxscript"``); the default
      dispatcher enables none, so an op without a converter is an error.
    - ``packs``: ``no:NAME`` / ``NAME`` / ``NAME=PRIORITY`` items, as in ``TONNX_PACKS``.
    - ``extra_packs``: pack objects (modules with hook implementations) to use without
      installing them.

    A dispatcher is immutable, so the registry built for it is cached and reused.
    """

    def __init__(
        self,
        converters: Mapping[Any, Callable] | Iterable[Converter] = (),
        *,
        fallback: str | Sequence[str] = (),
        packs: Sequence[str] = (),
        extra_packs: Sequence[Any] = (),
    ):
        if isinstance(converters, Mapping):
            converters = [Converter(t, f) for t, f in converters.items()]
        self.converters: tuple[Converter, ...] = tuple(converters)
        for conv in self.converters:
            if not isinstance(conv, Converter) or not callable(conv.function):
                raise TonnxError(
                    f"Dispatcher converters must be Converter records or a mapping "
                    f"target -> function, got {conv!r}."
                )
        self.fallback: tuple[str, ...] = (fallback,) if isinstance(fallback, str) else tuple(fallback)
        self.packs: tuple[str, ...] = tuple(packs) + self.fallback
        self.extra_packs: tuple[Any, ...] = tuple(extra_packs)

    def __repr__(self) -> str:
        return (
            f"Dispatcher({len(self.converters)} converters, fallback={list(self.fallback)}, "
            f"packs={list(self.packs)})"
        )


#: The default dispatcher: packs only, no fallback.
DEFAULT_DISPATCHER = Dispatcher()
