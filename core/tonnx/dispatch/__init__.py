"""Dispatch: converter records, packs, priority rules and the registry."""

from ._converter import Converter, target_key
from ._dispatcher import Dispatcher
from ._hookspecs import hookimpl
from ._pack import PackSpec

__all__ = ["Converter", "Dispatcher", "PackSpec", "hookimpl", "target_key"]
