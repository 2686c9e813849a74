"""PackManager: discovers packs through entry points and pluggy, builds registries."""

from __future__ import annotations

import contextlib
import importlib.metadata
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import pluggy

from tonnx._errors import ConverterNotFoundError, PackLoadError, TonnxError
from tonnx.dispatch import _config, _hookspecs, _shadow
from tonnx.dispatch._converter import Converter, packet_key, target_key
from tonnx.dispatch._key_check import check_op_key
from tonnx.dispatch._dispatcher import DEFAULT_DISPATCHER, Dispatcher
from tonnx.dispatch._pack import PackSpec
from tonnx.dispatch._registry import INHOUSE_PACK, INHOUSE_PRIORITY, Candidate, Registry

ENTRY_POINT_GROUP = "tonnx.packs"
#: Registries kept per manager: a few opsets times a few dispatchers in a session.
REGISTRY_CACHE_SIZE = 32


class PackLoadWarning(UserWarning):
    """A pack failed to load and was skipped (only with TONNX_STRICT_PACKS=0)."""


@dataclass(frozen=True)
class PackOrigin:
    """Where a pack comes from, for ``tonnx packs`` and the exported model's metadata."""

    distribution: str
    version: str
    path: str


class PackManager:
    """Owns the pluggy plugin manager and the installed packs of one process.

    Blocked packs are never imported. A pack that fails to import, whose hook raises or
    whose PackSpec is invalid is an error (as pytest treats a broken plugin), and so is a
    pack whose lazy ``load()`` raises when a registry needs it, unless loading is not strict
    (``TONNX_STRICT_PACKS=0``), in which case it is reported (``failures``) and skipped.
    Either way the message names the pack, its distribution and ``no:NAME``. With autoload disabled, only the packs named by ``TONNX_PACKS`` or a
    dispatcher's ``packs=`` are loaded: an allow-list.
    """

    def __init__(self, *, autoload: bool | None = None, strict: bool | None = None):
        self._pm = pluggy.PluginManager(_hookspecs.PROJECT)
        self._pm.add_hookspecs(_hookspecs)
        self.env_config = _config.from_environment()
        self.strict = _config.strict_loading() if strict is None else strict
        self.autoload = not _config.autoload_disabled() if autoload is None else autoload
        self.specs: dict[str, PackSpec] = {}
        self.versions: dict[str, str] = {}
        self.origins: dict[str, PackOrigin] = {}
        self.failures: dict[str, str] = {}
        self._converters: dict[str, tuple[Converter, ...]] = {}
        self._registries: OrderedDict[tuple, Registry] = OrderedDict()
        self._load_errors: dict[str, PackLoadError] = {}
        self._entry_points = _entry_points() if self.autoload or self.env_config.enabled else {}
        if self.autoload:
            for name in list(self._entry_points):
                self._load_entry_point(name)
        else:
            self.load_named(self.env_config)

    # -- discovery ------------------------------------------------------------------------------

    def load_named(self, config: _config.PackConfig) -> None:
        """Loads the entry points ``config`` enables by name (the allow-list)."""
        for name in sorted(config.enabled - config.blocked):
            if name not in self.specs and name not in self.failures:
                if not self._entry_points:
                    self._entry_points = _entry_points()
                if name in self._entry_points:
                    self._load_entry_point(name)

    def _load_entry_point(self, name: str) -> None:
        ep = self._entry_points[name]
        if name in self.env_config.blocked:
            self._pm.set_blocked(name)
            return
        dist = getattr(ep, "dist", None)
        distribution = dist.metadata["Name"] if dist else "?"
        origin = PackOrigin(distribution, dist.version if dist else "?", ep.value)
        try:
            plugin = ep.load()
        except Exception as e:
            self.origins[name] = origin
            note = _shadow.shadow_note(ep.value, distribution)
            self._failed(name, f"import of {ep.value!r} failed: {type(e).__name__}: {e}.{note}", e)
            return
        origin = PackOrigin(origin.distribution, origin.version, _shadow.location(plugin))
        self.register(plugin, name=name, version=origin.version, origin=origin, module=ep.value)

    def register(
        self,
        plugin: Any,
        *,
        name: str | None = None,
        version: str | None = None,
        origin: PackOrigin | None = None,
        module: str | None = None,
    ) -> PackSpec | None:
        """Registers an installed pack; it is validated whole before any state changes.

        ``module`` is the entry point's module, named when it is not the pack it should be.
        """
        label = name or getattr(plugin, "__name__", None) or repr(plugin)
        try:
            spec = spec_of(plugin, label)
            if name is not None and spec.name != name:
                raise PackLoadError(
                    f"Pack {label!r}: its entry point is named {name!r} but its PackSpec "
                    f"{spec.name!r}; the two must match so that 'no:{name}' blocks it."
                )
            if spec.name in self.specs:
                raise PackLoadError(
                    f"Two packs are named {spec.name!r} ({self.origins[spec.name].path} and "
                    f"{getattr(plugin, '__file__', plugin)}); uninstall one, or block it with "
                    f"TONNX_PACKS='no:{spec.name}'."
                )
        except Exception as e:
            if origin is not None:
                self.origins[label] = origin
            note = _shadow.shadow_note(module, origin.distribution if origin else "?") if module else ""
            self._failed(label, f"{e}{note}", e)
            return None
        self._pm.register(plugin, name=spec.name)
        self.specs[spec.name] = spec
        self.versions[spec.name] = version or spec.version
        self.origins[spec.name] = origin or PackOrigin(
            "(registered)", version or spec.version, getattr(plugin, "__file__", None) or repr(plugin)
        )
        return spec

    def _failed(self, name: str, message: str, error: Exception) -> None:
        origin = self.origins.get(name)
        where = f" (distribution {origin.distribution!r})" if origin else ""
        message = message.rstrip(".") + "."
        if message.startswith(f"Pack {name!r}"):
            text = message.replace(f"Pack {name!r}", f"Pack {name!r}{where}", 1)
        else:
            text = f"Pack {name!r}{where} failed to load: {message}"
        if self.strict:
            raise PackLoadError(
                f"{text} {block_hint(name)}, or set TONNX_STRICT_PACKS=0 to skip broken "
                f"packs with a warning."
            ) from (error.__cause__ or error if isinstance(error, PackLoadError) else error)
        self.failures[name] = message.removeprefix(f"Pack {name!r}").lstrip(": ")
        warnings.warn(
            f"{text} It is skipped (TONNX_STRICT_PACKS=0). {block_hint(name)}; that also "
            f"silences this warning.",
            PackLoadWarning,
            stacklevel=4,
        )

    # -- converters -----------------------------------------------------------------------------

    def converters(self, name: str, runtime: tuple = ()) -> tuple[Converter, ...]:
        """An installed pack's converters, imported on first use and checked as a whole.

        ``runtime``: the dispatcher's ``target_runtime`` items, for a pack whose converters
        depend on it (``PackSpec.load_for_runtime``); one table per target. A ``load()``
        that raises is a :class:`PackLoadError`, raised again on every call (the pack is
        not imported twice).
        """
        key = (name, runtime) if runtime and self.specs[name].load_for_runtime is not None else name
        found = self._converters.get(key)
        if found is None:
            error = self._load_errors.get(key)
            if error is not None:
                raise error
            try:
                found = load_converters(self.specs[name], runtime)
            except PackLoadError as e:
                self._load_errors[key] = e
                raise
            self._converters[key] = found
        return found

    def usable_converters(self, name: str, runtime: tuple = ()) -> tuple[Converter, ...] | None:
        """The pack's converters, or None when its ``load()`` failed and loading is not strict."""
        try:
            return self.converters(name, runtime)
        except PackLoadError as e:
            if name not in self.failures:
                self._failed(name, str(e), e)
            return None

    def pack_config(self, dispatcher: Dispatcher) -> _config.PackConfig:
        return _config.parse_items(dispatcher.packs, base=self.env_config, source="packs=")

    def enabled_packs(self, config: _config.PackConfig) -> dict[str, PackSpec]:
        """Enabled installed packs: not blocked, not failed; fallbacks only when asked for."""
        return {
            name: spec
            for name, spec in self.specs.items()
            if name not in config.blocked
            and name not in self.failures
            and (not spec.fallback or name in config.enabled)
        }

    def registry(self, opset: int, dispatcher: Dispatcher = DEFAULT_DISPATCHER) -> Registry:
        """The registry for ``opset`` and ``dispatcher``, built once and cached.

        The cache key holds the dispatcher itself (compared by value), so a registry can
        only be reused by an equal dispatcher; the least recently used entry is dropped
        beyond ``REGISTRY_CACHE_SIZE``.
        """
        config = self.pack_config(dispatcher)
        cache_key = (opset, config, dispatcher)
        registry = self._registries.get(cache_key)
        if registry is not None:
            self._registries.move_to_end(cache_key)
            return registry
        self.load_named(config)
        extra = {spec.name: spec for spec in (spec_of(p, repr(p)) for p in dispatcher.extra_packs)}
        clash = sorted(set(extra) & set(self.specs))
        if clash:
            raise PackLoadError(
                f"extra_packs {clash} have the name of installed packs; rename them, or block "
                f"the installed ones with packs=['no:{clash[0]}']."
            )
        missing = [
            n for n in config.enabled if n not in self.specs and n not in extra and n not in config.blocked
        ]
        if missing:
            raise PackLoadError(
                f"Pack(s) {sorted(missing)} were asked for but are not installed "
                f"(installed: {sorted(self.specs)}; failed: {sorted(self.failures)}). "
                f"`tonnx packs` lists them; pip install the pack or fix the name."
            )
        registry = self._build(opset, dispatcher, config, extra)
        self._registries[cache_key] = registry
        if len(self._registries) > REGISTRY_CACHE_SIZE:
            self._registries.popitem(last=False)
        return registry

    def _build(self, opset: int, dispatcher: Dispatcher, config, extra: dict[str, PackSpec]) -> Registry:
        candidates = []
        packs: dict[str, Any] = {}
        enabled = self.enabled_packs(config)
        for name, spec in extra.items():
            if name not in config.blocked and (not spec.fallback or name in config.enabled):
                enabled[name] = spec
        chain = {name: i for i, name in enumerate(dispatcher.fallback)}
        for name, spec in enabled.items():
            priority = config.priority_of(name, spec.priority)
            runtime = tuple(sorted(dispatcher.target_runtime.items()))
            converters = load_converters(spec, runtime) if name in extra else self.usable_converters(name, runtime)
            if converters is None:  # failed, not strict: reported in ``failures``
                continue
            packs[name] = spec
            position = chain.get(name, len(chain))
            for conv in converters:
                if conv.opsets[0] <= opset <= conv.opsets[1]:
                    # a user's priority moves the whole pack: its own order stays as it is
                    prio = priority if conv.priority is None else conv.priority + priority - spec.priority
                    candidates.append(
                        Candidate(prio, not conv.is_packet, name, conv, spec.fallback, position)
                    )
        for conv in dispatcher.converters:
            problem = check_op_key(conv.key)
            if problem:
                raise TonnxError(
                    f"Dispatcher converter {conv.qualified_name} is registered for "
                    f"{conv.key!r}, but {problem}: it would never be used. Spell the op as "
                    f"'aten::relu.default', 'aten.relu.default' or torch.ops.aten.relu.default."
                )
            if conv.opsets[0] <= opset <= conv.opsets[1]:
                candidates.append(Candidate(INHOUSE_PRIORITY, not conv.is_packet, INHOUSE_PACK, conv))
        packs[INHOUSE_PACK] = None
        registry = Registry(candidates, opset, packs)
        registry.extra_specs = extra
        return registry

    # -- reporting ------------------------------------------------------------------------------

    def not_found_error(self, missing: dict[str, int], registry: Registry, config) -> ConverterNotFoundError:
        """The error for ops without converter: all of them, where help may be found."""
        enabled = [p for p in registry.packs if p != INHOUSE_PACK]
        lines = [f"No converter for {len(missing)} op(s) of the graph:"]
        for key, count in sorted(missing.items()):
            hint = self.disabled_handlers(key, enabled, registry.extra_specs)
            lines.append(f"  {key} ({count} node{'s' if count > 1 else ''}){hint}")
        if any(key.startswith("torch._functorch") or "flat_apply" in key for key in missing):
            lines.append(
                "torch._functorch.* ops (and flat_apply) are a torch.vmap / torch.func region "
                "torch.export left in the graph: rewrite it with batched tensor ops (a leading "
                "batch dimension, broadcasting, torch.bmm/einsum) or lower it first with "
                "ep.run_decompositions()."
            )
        lines.append(f"Packs searched (opset {registry.opset}): {enabled or 'none'}.")
        if self.failures:
            lines.append(f"Packs that failed to load: {self.failures}.")
        fallbacks = [name for name, spec in registry.packs.items() if spec is not None and spec.fallback]
        if fallbacks:  # already enabled: suggesting one would send the user in a circle
            lines.append(
                f"Fix: install or enable a pack that converts these ops (`tonnx packs` lists "
                f"them), or register your own with tonnx.Dispatcher(converters={{op: function}}); "
                f"the fallback pack(s) enabled ({', '.join(fallbacks)}) do not convert them either."
            )
        else:
            lines.append(
                "Fix: install or enable a pack that converts these ops (`tonnx packs` lists them), "
                "register your own with tonnx.Dispatcher(converters={op: function}), or allow a "
                "fallback explicitly, e.g. dispatcher=tonnx.Dispatcher(fallback='onnxscript')."
            )
        return ConverterNotFoundError("\n".join(lines), missing)

    def disabled_handlers(self, key: str, enabled: list[str], extra: dict | None = None) -> str:
        """`` -- handled by disabled pack(s) ...`` for an op a disabled pack converts."""
        names = []
        for name in [*self.specs, *(extra or {})]:
            if name in enabled:
                continue
            try:
                found = self.converters(name) if name in self.specs else load_converters(extra[name])
            except PackLoadError:
                continue
            keys = {c.key for c in found}
            if key in keys or packet_key(key) in keys:
                names.append(name)
        if not names:
            return ""
        return " -- handled by disabled pack(s) " + ", ".join(
            f"{n!r} (enable with packs=['{n}'] or TONNX_PACKS='{n}')" for n in names
        )


def block_hint(name: str) -> str:
    """How to leave a pack out: the ``no:NAME`` item, in both spellings."""
    return (f"Fix or uninstall it, or block it with TONNX_PACKS='no:{name}' "
            f"(packs=['no:{name}'], tonnx export --no-pack {name})")


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def spec_of(plugin: Any, label: str) -> PackSpec:
    """The plugin's validated PackSpec, computed without touching any shared state.

    A throw-away pluggy manager checks the hook implementations (pluggy quotes a wrong
    definition), so an invalid pack leaves the process's manager unchanged.
    """
    probe = pluggy.PluginManager(_hookspecs.PROJECT)
    probe.add_hookspecs(_hookspecs)
    try:
        probe.register(plugin)
    except Exception as e:
        raise PackLoadError(f"Pack {label!r} has invalid hooks: {type(e).__name__}: {e}") from e
    impls = probe.hook.tonnx_pack.get_hookimpls()
    if len(impls) != 1:
        raise PackLoadError(f"Pack {label!r} does not implement tonnx_pack() (@tonnx.hookimpl).")
    try:
        spec = impls[0].function()
    except Exception as e:
        raise PackLoadError(f"tonnx_pack() of pack {label!r} raised {type(e).__name__}: {e}") from e
    check_spec(spec, label)
    return spec


def check_spec(spec: Any, label: str) -> None:
    """A PackSpec's fields, checked where it enters the core."""
    if not isinstance(spec, PackSpec):
        raise PackLoadError(
            f"tonnx_pack() of {label!r} returned {type(spec).__name__}, expected tonnx.PackSpec."
        )
    problems = []
    if not isinstance(spec.name, str) or not spec.name or not spec.name.replace("-", "_").isidentifier():
        problems.append(f"name {spec.name!r} is not a simple identifier")
    if not callable(spec.load):
        problems.append("load is not callable")
    for hook in ("load_for_runtime", "runtime_requirements", "commands"):
        if getattr(spec, hook) is not None and not callable(getattr(spec, hook)):
            problems.append(f"{hook} is not callable")
    if type(spec.priority) is not int:
        problems.append(f"priority {spec.priority!r} is not an int")
    if not all(isinstance(d, str) and d and type(v) is int for d, v in dict(spec.domains).items()):
        problems.append(f"domains {dict(spec.domains)!r} is not a mapping of domain names to int versions")
    if problems:
        raise PackLoadError(f"Pack {label!r}: invalid PackSpec: {'; '.join(problems)}.")


def load_converters(spec: PackSpec, runtime: tuple = ()) -> tuple[Converter, ...]:
    """Imports a pack's converters and validates them all before any is used; for the
    target ``runtime`` items when the pack has a ``load_for_runtime``."""
    try:
        found = tuple(spec.load_for_runtime(dict(runtime)) if runtime and spec.load_for_runtime else spec.load())
    except Exception as e:
        raise PackLoadError(
            f"Pack {spec.name!r}: its load() raised {type(e).__name__}: {e}"
        ) from e
    for conv in found:
        if not isinstance(conv, Converter):
            raise PackLoadError(f"Pack {spec.name!r} returned {conv!r}, expected tonnx.Converter records.")
        if not callable(conv.function):
            raise PackLoadError(f"Pack {spec.name!r}: converter for {conv.key!r} is not callable.")
        lo, hi = conv.opsets
        if lo > hi:
            raise PackLoadError(f"Pack {spec.name!r}: converter {conv.qualified_name} has opsets {lo}>{hi}.")
        if type(conv.complex) is not bool:
            raise PackLoadError(
                f"Pack {spec.name!r}: converter {conv.qualified_name} has complex="
                f"{conv.complex!r}, expected True or False."
            )
        target_key(conv.target)
    return found


_DEFAULT: list[PackManager] = []


def default_manager() -> PackManager:
    """The process's pack manager, created (and packs discovered) on first use."""
    if not _DEFAULT:
        _DEFAULT.append(PackManager())
    return _DEFAULT[0]


def reset_default_manager() -> None:
    """Forgets the discovered packs (after installing one, or changing TONNX_* variables)."""
    _DEFAULT.clear()


def diagnostic_manager() -> PackManager:
    """The process's pack manager for the commands that diagnose packs (``tonnx packs``,
    ``explain``, ``--version``, ``coverage``): a pack that fails to load while it is created
    is recorded in ``failures`` and reported, never raised; afterwards the manager is as
    strict as ``TONNX_STRICT_PACKS`` says."""
    if not _DEFAULT:
        with _quiet_failures():
            manager = PackManager(strict=False)
        manager.strict = _config.strict_loading()
        _DEFAULT.append(manager)
    return _DEFAULT[0]


@contextlib.contextmanager
def lenient(manager: PackManager):
    """Within: a pack whose ``load()`` raises is recorded in ``failures``, not raised."""
    strict, manager.strict = manager.strict, False
    try:
        with _quiet_failures():
            yield manager
    finally:
        manager.strict = strict


@contextlib.contextmanager
def _quiet_failures():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PackLoadWarning)
        yield
