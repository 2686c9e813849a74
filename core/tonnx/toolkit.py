"""The public surface for packs that drive whole exports, as ``tonnx export-llm`` does.

:mod:`tonnx.converters` is what a converter imports; this is what a pack's command or
pipeline imports to stream weights, derive initializers, show progress, load a user's
``MODULE:CALLABLE`` and clean up on SIGTERM. Every other module of tonnx is private and may
change; ``tests/core/test_public_api.py`` pins this list, and the transformers pack imports
nothing else of tonnx (checked by ``tests/transformers_pack/test_public_imports.py``).

- :class:`SafetensorsWeights`: the weights of a model built on ``meta``, read from its
  safetensors files one tensor at a time while the file is written (``to_onnx(...,
  weights=...)``); subclass it to transform tensors on the way (export-llm quantizes there).
- :class:`Derivation`: an initializer computed from others when the writer asks for its
  bytes (``GraphBuilder.derivations``); :func:`has_data`: whether a value holds data (not
  a ``meta`` placeholder).
- :class:`Progress`: tonnx's one-line progress bar on stderr (``with Progress(record)``).
- :func:`import_module_or_file` and :class:`TargetError`: the module of a
  ``MODULE_OR_FILE:CALLABLE`` argument, as ``tonnx export`` resolves it.
- :mod:`exit_codes`: the ``tonnx`` command's exit codes (``exit_codes.of_error(e)``), for a
  pack's command to exit as ``tonnx export`` does.
- :func:`sigterm_raises` and :class:`Terminated`: SIGTERM as an exception while files are
  written, so temporaries are removed.
"""

from __future__ import annotations

from tonnx._sigterm import Terminated, sigterm_raises
from tonnx.builder._constants import has_data
from tonnx.builder._derived import Derivation
from tonnx.pipeline.write._weights import SafetensorsWeights
from tonnx.tools.cli import _codes as exit_codes
from tonnx.tools.cli._progress import Progress
from tonnx.tools.cli._target import TargetError, import_module_or_file

__all__ = [
    "Derivation",
    "Progress",
    "SafetensorsWeights",
    "TargetError",
    "Terminated",
    "exit_codes",
    "has_data",
    "import_module_or_file",
    "sigterm_raises",
]
