"""Dispatch: converter records, packs, priority rules and the registry."""

from tonnx.dispatch._converter import Converter, target_key
from tonnx.dispatch._dispatcher import Dispatcher
from tonnx.dispatch._hookspecs import hookimpl
from tonnx.dispatch._pack import PackSpec

__all__ = ["Converter", "Dispatcher", "PackSpec", "hookimpl", "target_key"]
