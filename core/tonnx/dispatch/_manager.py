"""PackManager: discovers packs through entry points and pluggy, builds registries."""

from __future__ import annotations

import importlib.metadata
import warnings
from typing import Any

import pluggy

from .._errors import ConverterNotFoundError, PackLoadError
from . import _config, _hookspecs
from ._converter import Converter, packet_key, target_key
from ._dispatcher import DEFAULT_DISPATCHER, Dispatcher
from ._pack import PackSpec
from ._registry import INHOUSE_PACK, INHOUSE_PRIORITY, Candidate, Registry

ENTRY_POINT_GROUP = "tonnx.packs"


class PackLoadWarning(UserWarning):
    """A pack failed to load and was skipped (set TONNX_STRICT_PACKS=1 to fail instead)."""


class PackManager:
    """Owns the pluggy plugin manager and the loaded packs of one process.

    Blocked packs are never imported; a pack whose import fails is reported with its name
    and error and the others still load, unless loading is strict.
    """

    def __init__(self, *, autoload: bool | None = None, strict: bool | None = None):
        self._pm = pluggy.PluginManager(_hookspecs.PROJECT)
        self._pm.add_hookspecs(_hookspecs)
        self.env_config = _config.from_environment()
        self.strict = _config.strict_loading() if strict is None else strict
        self.specs: dict[str, PackSpec] = {}
        self.versions: dict[str, str] = {}
        self.failures: dict[str, str] = {}
        self._converters: dict[str, tuple[Converter, ...]] = {}
        self._registries: dict[tuple, Registry] = {}
        if autoload if autoload is not None else not _config.autoload_disabled():
            self.load_entry_points()

    # -- discovery ------------------------------------------------------------------------------

    def load_entry_points(self) -> None:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in self.env_config.blocked:
                self._pm.set_blocked(ep.name)
                continue
            try:
                plugin = ep.load()
            except Exception as e:  # a broken pack must not hide the others
                self._failed(ep.name, f"import of {ep.value!r} failed: {type(e).__name__}: {e}", e)
                continue
            dist = getattr(ep, "dist", None)
            self.register(plugin, name=ep.name, version=dist.version if dist else None)

    def register(self, plugin: Any, *, name: str | None = None, version: str | None = None) -> PackSpec:
        """Registers a pack object (module or instance implementing the hooks)."""
        try:
            self._pm.register(plugin, name=name)
            impls = [i for i in self._pm.hook.tonnx_pack.get_hookimpls() if i.plugin is plugin]
            if len(impls) != 1:
                raise PackLoadError(f"pack {name or plugin!r} does not implement tonnx_pack()")
            spec = impls[0].function()
            if not isinstance(spec, PackSpec):
                raise PackLoadError(
                    f"tonnx_pack() of {name or plugin!r} returned {type(spec).__name__}, "
                    f"expected tonnx.PackSpec"
                )
        except Exception as e:
            if self._pm.is_registered(plugin):
                self._pm.unregister(plugin)
            self._failed(name or repr(plugin), str(e), e)
            return None
        if spec.name in self.specs:
            self._pm.unregister(plugin)
            raise PackLoadError(
                f"Two packs are named {spec.name!r}; block one with TONNX_PACKS='no:{name}'."
            )
        self.specs[spec.name] = spec
        self.versions[spec.name] = version or spec.version
        return spec

    def _failed(self, name: str, message: str, error: Exception) -> None:
        if self.strict:
            raise PackLoadError(f"Pack {name!r} failed to load: {message}") from error
        self.failures[name] = message
        warnings.warn(
            f"tonnx pack {name!r} failed to load and is skipped: {message} "
            f"(TONNX_STRICT_PACKS=1 makes this an error; TONNX_PACKS='no:{name}' silences it)",
            PackLoadWarning,
            stacklevel=3,
        )

    # -- converters -----------------------------------------------------------------------------

    def converters(self, name: str) -> tuple[Converter, ...]:
        """The pack's converters, imported on first use and checked as a whole."""
        found = self._converters.get(name)
        if found is None:
            spec = self.specs[name]
            try:
                found = tuple(spec.load())
            except Exception as e:
                raise PackLoadError(
                    f"Pack {name!r} failed to load its converters: {type(e).__name__}: {e}"
                ) from e
            _check_pack(name, found)
            self._converters[name] = found
        return found

    def pack_config(self, dispatcher: Dispatcher) -> _config.PackConfig:
        return _config.parse_items(dispatcher.packs, base=self.env_config)

    def enabled_packs(self, config: _config.PackConfig) -> dict[str, PackSpec]:
        """Enabled packs: not blocked; fallbacks only when asked for."""
        return {
            name: spec
            for name, spec in self.specs.items()
            if name not in config.blocked and (not spec.fallback or name in config.enabled)
        }

    def registry(self, opset: int, dispatcher: Dispatcher = DEFAULT_DISPATCHER) -> Registry:
        """The registry for ``opset`` and ``dispatcher``, built once and cached."""
        for pack in dispatcher.extra_packs:
            if not self._pm.is_registered(pack):
                self.register(pack)
        config = self.pack_config(dispatcher)
        cache_key = (opset, config, id(dispatcher))
        registry = self._registries.get(cache_key)
        if registry is None:
            missing = [n for n in config.enabled if n not in self.specs and n not in config.blocked]
            if missing:
                raise PackLoadError(
                    f"Pack(s) {missing} were asked for but are not installed "
                    f"(installed: {sorted(self.specs)}; failed: {sorted(self.failures)})."
                )
            registry = self._build(opset, dispatcher, config)
            self._registries[cache_key] = registry
        return registry

    def _build(self, opset: int, dispatcher: Dispatcher, config) -> Registry:
        candidates = []
        packs: dict[str, Any] = {}
        for name, spec in self.enabled_packs(config).items():
            priority = config.priority_of(name, spec.priority)
            packs[name] = spec
            for conv in self.converters(name):
                if conv.opsets[0] <= opset <= conv.opsets[1]:
                    prio = conv.priority if conv.priority is not None else priority
                    candidates.append(Candidate(prio, not conv.is_packet, name, conv, spec.fallback))
        for conv in dispatcher.converters:
            if conv.opsets[0] <= opset <= conv.opsets[1]:
                candidates.append(Candidate(INHOUSE_PRIORITY, not conv.is_packet, INHOUSE_PACK, conv))
        packs[INHOUSE_PACK] = None
        return Registry(candidates, opset, packs)

    # -- reporting ------------------------------------------------------------------------------

    def not_found_error(self, missing: dict[str, int], registry: Registry, config) -> ConverterNotFoundError:
        """The error for ops without converter: all of them, where help may be found."""
        enabled = [p for p in registry.packs if p != INHOUSE_PACK]
        lines = [f"No converter for {len(missing)} op(s) of the graph:"]
        for key, count in sorted(missing.items()):
            hint = self._disabled_handlers(key, enabled)
            lines.append(f"  {key} ({count} node{'s' if count > 1 else ''}){hint}")
        lines.append(f"Packs searched (opset {registry.opset}): {enabled or 'none'}.")
        if self.failures:
            lines.append(f"Packs that failed to load: {self.failures}.")
        lines.append(
            "Fix: install or enable a pack that converts these ops (`tonnx packs` lists them), "
            "register your own with tonnx.Dispatcher(converters={op: function}), or allow a "
            "fallback explicitly, e.g. dispatcher=tonnx.Dispatcher(fallback='onnxscript')."
        )
        return ConverterNotFoundError("\n".join(lines), missing)

    def _disabled_handlers(self, key: str, enabled: list[str]) -> str:
        names = []
        for name in self.specs:
            if name in enabled:
                continue
            try:
                keys = {c.key for c in self.converters(name)}
            except PackLoadError:
                continue
            if key in keys or packet_key(key) in keys:
                names.append(name)
        if not names:
            return ""
        return " -- handled by disabled pack(s) " + ", ".join(
            f"{n!r} (enable with packs=['{n}'] or TONNX_PACKS='{n}')" for n in names
        )


def _check_pack(name: str, converters: tuple) -> None:
    """Validates a whole pack before any of it is used."""
    for conv in converters:
        if not isinstance(conv, Converter):
            raise PackLoadError(f"Pack {name!r} returned {conv!r}, expected tonnx.Converter records.")
        if not callable(conv.function):
            raise PackLoadError(f"Pack {name!r}: converter for {conv.key!r} is not callable.")
        lo, hi = conv.opsets
        if lo > hi:
            raise PackLoadError(f"Pack {name!r}: converter {conv.qualified_name} has opsets {lo}>{hi}.")
        target_key(conv.target)


_DEFAULT: list[PackManager] = []


def default_manager() -> PackManager:
    """The process's pack manager, created (and packs discovered) on first use."""
    if not _DEFAULT:
        _DEFAULT.append(PackManager())
    return _DEFAULT[0]


def reset_default_manager() -> None:
    """Forgets the discovered packs (after installing one, or changing TONNX_* variables)."""
    _DEFAULT.clear()
