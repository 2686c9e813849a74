"""PackSpec: what a pack tells the manager about itself."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

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
    #: optional, for a pack whose converters depend on the runtime that will run the model
    #: (an op whose inputs or meaning changed between versions): called instead of ``load``
    #: when the dispatcher names target runtimes (``Dispatcher(target_runtime={"onnxruntime":
    #: "1.31.1"})``, given as that dict) and returns the converters for that target; ``load``
    #: is the pack's default target
    load_for_runtime: Callable[[Mapping[str, str]], Iterable] | None = None
    #: optional: the oldest version of each runtime (``{"onnxruntime": "1.32.0"}``) that
    #: runs the given nodes of the pack's ``domains`` (builder nodes: ``op_type``,
    #: ``domain``, ``inputs``, ``attributes``) as the pack meant; the model records the
    #: highest over all packs as ``pkg.tonnx.min_<runtime>`` metadata
    runtime_requirements: Callable[[list], Mapping[str, str]] | None = None
    #: optional: called with the ``tonnx`` command's argparse subparsers while the command
    #: line is parsed; adds the pack's subcommands (``sub.add_parser(NAME, ...)``, each with
    #: ``set_defaults(run=...)``, a function of the parsed arguments returning an exit code).
    #: Keep it cheap (no torch import): import what a command needs in its ``run``. A name
    #: already taken is a ``PackLoadError``
    commands: Callable[[Any], None] | None = None
