"""Why a pack's module is not the pack: a file or folder of its name earlier on ``sys.path``.

``python`` puts the current directory (or the script's folder) first on ``sys.path``, so an
output folder named ``tonnx_aten/`` is imported instead of the installed ``tonnx_aten`` (as
a namespace package when it has no ``__init__.py``). Asked only after a pack failed to load.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys


def location(module) -> str:
    """Where a module was imported from: its file, or its folders for a namespace package."""
    file = getattr(module, "__file__", None)
    if file:
        return os.path.abspath(file)
    paths = list(getattr(module, "__path__", None) or [])
    if paths:
        return ", ".join(os.path.abspath(p) for p in paths)
    return repr(module)


def _is_namespace(module) -> bool:
    return getattr(module, "__file__", None) is None and getattr(module, "__path__", None) is not None


def _other_origin(top: str, shadow: str) -> str | None:
    """Where ``top`` would be imported from if ``shadow`` were not there, or None."""
    entries = [e for e in sys.path if not shadow.startswith(os.path.abspath(e or os.curdir) + os.sep)]
    finders = [importlib.machinery.PathFinder, *getattr(sys, "meta_path", [])]
    for finder in finders:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        try:
            spec = find_spec(top, entries) if finder is importlib.machinery.PathFinder else find_spec(top, None)
        except Exception:  # a third-party finder that does not take this call: not the answer
            continue
        origin = getattr(spec, "origin", None) if spec is not None else None
        if origin and origin not in ("built-in", "frozen") and os.path.abspath(origin) != shadow:
            return os.path.abspath(origin)
    return None


def shadow_note(module_path: str, distribution: str) -> str:
    """A sentence saying which file or folder was imported for ``module_path`` and why that
    is the likely cause, or ``""`` when the module looks like the installed one."""
    top = module_path.split(":")[0].split(".")[0].strip()
    module = sys.modules.get(top)
    if module is None:
        return ""
    where = location(module)
    other = _other_origin(top, where.split(", ")[0])
    if other is None and not _is_namespace(module):
        return ""
    kind = "a folder without __init__.py, imported as a namespace package" if _is_namespace(module) else (
        "a package" if getattr(module, "__path__", None) is not None else "a file")
    text = f" Module {top!r} was imported from {where} ({kind})"
    if other:
        text += f", not from the installed pack of distribution {distribution!r} ({other})"
    cwd = os.getcwd()
    here = " in the current directory" if where.startswith(cwd + os.sep) else " earlier on sys.path"
    return (
        f"{text}: a file or folder named {top!r}{here} shadows the installed pack (an output "
        f"folder, say). Rename or move it, or run from another directory."
    )
