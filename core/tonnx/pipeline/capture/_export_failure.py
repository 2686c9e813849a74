"""What tonnx says when torch.export stops: where in the model, and what to try.

torch.export's own message is long (a data-dependent guard prints torch's debugging
advice; a failing op names no model line). The header written here names the model's line
where the export stopped (the innermost frame of the traceback outside torch, read from
the exception itself) and the usual ways around that kind of failure; torch's message
follows, whole.
"""

from __future__ import annotations

import linecache
import os
import sysconfig
import traceback

_DATA_DEPENDENT = (
    "the line reads a tensor's values to branch or to size a tensor (.item(), .any(), "
    "nonzero, a max as a size): one traced program cannot hold every input's choice. Try: "
    "compute it without the Python branch (torch.where, torch.cond) or with a size known "
    "from the shapes, as an export patch (a pack's PackSpec.export_patches, or your own "
    "around tonnx.export_patches() and torch.export.export); torch.export.draft_export(...) "
    "lists every such place at once"
)
_OTHER = (
    "run the model eagerly on the same inputs (and with padding in the attention mask): an "
    "error eager raises too comes from the model, its config or its inputs, not from the "
    "export; otherwise export an ExportedProgram you made yourself (tonnx.to_onnx(ep))"
)


def export_failure_message(error: BaseException) -> str:
    """The ExportFailedError text for ``error`` raised by ``torch.export.export``."""
    where = _model_frames(error)
    at = f" at {where}" if where else " (no frame of the model in the traceback)"
    data_dependent = "DataDependent" in type(error).__name__ or "data-dependent" in str(error)
    hint = _DATA_DEPENDENT if data_dependent else _OTHER
    return (
        f"torch.export stopped{at}. This is torch.export's failure, not tonnx's. "
        f"What to try: {hint}.\ntorch.export's error: {type(error).__name__}: {error}"
    )


_INSTALLED_DIRS = frozenset({"site-packages", "dist-packages"})


def _model_frames(error: BaseException) -> str:
    """``file:line in function: `code``` of the innermost frame outside torch, tonnx and the
    stdlib; when that is a helper (not a ``forward``), the module ``forward`` that called it."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not _framework(f.filename)]
    if not frames:
        return ""
    text = _describe(frames[-1])
    if frames[-1].name == "forward":
        return text
    caller = next((f for f in reversed(frames[:-1]) if f.name == "forward"), None)
    return text if caller is None else f"{text}, called from {_describe(caller)}"


def _describe(frame: traceback.FrameSummary) -> str:
    code = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
    return f"{frame.filename}:{frame.lineno} in {frame.name}: `{code}`"


def _framework(filename: str) -> bool:
    """Whether ``filename`` is torch's, tonnx's (its packs' included: a pack's export
    patch or fake kernel is not the model's line) or the standard library's. Installed
    packages are the user's model code even when ``site-packages`` sits inside the stdlib
    directory (an interpreter used without a venv)."""
    if filename.startswith("<"):
        return True
    path = os.path.abspath(filename)
    paths = sysconfig.get_paths()
    if any(_inside(path, root) for root in _exporter_roots()):
        return True
    installed = any(_inside(path, paths[key]) for key in ("purelib", "platlib"))
    installed = installed or not _INSTALLED_DIRS.isdisjoint(path.split(os.sep))
    return not installed and _inside(path, paths["stdlib"])


def _exporter_roots() -> list[str]:
    """The folders of torch, tonnx and every imported ``tonnx*`` package (the packs)."""
    import sys

    names = ("torch", *(name for name in list(sys.modules) if name.startswith("tonnx") and "." not in name))
    files = (getattr(sys.modules[name], "__file__", None) for name in names)
    return [os.path.dirname(os.path.abspath(file)) for file in files if file]


def _inside(path: str, root: str) -> bool:
    return path.startswith(os.path.abspath(root) + os.sep)
