"""PackSpec: what a pack tells the manager about itself."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

#: Default priority of a pack; the in-house converters of a dispatcher always win.
DEFAULT_PRIORITY = 100


@dataclass(frozen=True)
class PackSpec:
    """Identity, priority and lazy converter table of one converter pack.

    ``load`` imports the pack's converter modules and returns its
    :class:`tonnx.Converter` records; it runs when a registry is first built, so that
    ``import tonnx`` and pack discovery stay cheap. A ``fallback`` pack is disabled unless
    the user enables it (``Dispatcher(fallback=...)``, ``packs=["name"]`` or
    ``TONNX_PACKS``); what it converts is recorded in the exported model.
    """

    name: str
    load: Callable[[], Iterable]
    version: str = "0"
    priority: int = DEFAULT_PRIORITY
    fallback: bool = False
    #: custom ONNX domains its converters emit, with their versions
    domains: Mapping[str, int] = field(default_factory=dict)
    description: str = ""
    #: optional, lazy like ``load``: returns the pack's graph rewrite rules
    #: (``tonnx.converters.RewriteRule``), run once on the converted graph, packs in
    #: priority order; a blocked pack's rules never run
    rewrites: Callable[[], Iterable] | None = None
    #: optional, lazy like ``load``: returns the ``onnx.reference.op_run.OpRun`` classes
    #: (``op_domain`` set) that run the nodes of its ``domains`` in onnx's reference
    #: evaluator (``tonnx.testing.run_reference``)
    reference_kernels: Callable[[], Iterable] | None = None
    #: optional: returns a context manager that ``to_onnx`` enters around ``torch.export``
    #: of an ``nn.Module`` while the pack is enabled (never for an ExportedProgram). For a
    #: pack whose converters turn a whole module into one fused node: the patch routes the
    #: module through a custom op (``torch.library``) those converters handle
    export_patches: Callable[[], AbstractContextManager] | None = None
