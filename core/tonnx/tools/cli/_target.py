"""``MODULE_OR_FILE:CALLABLE`` -> the model and its example inputs (the callable contract).

The callable is called with no arguments and returns one of:

- ``(model, args)``: ``args`` is the tuple of positional inputs (a lone tensor is
  taken as ``(tensor,)``);
- ``(model, args, kwargs)``;
- a dict with ``"model"`` and ``"args"`` and optionally ``"kwargs"``,
  ``"dynamic_shapes"``, ``"input_names"``, ``"output_names"`` (as for ``tonnx.to_onnx``).

``model`` is an ``nn.Module``. ``MODULE_OR_FILE`` is a ``.py`` file (its folder is put on
``sys.path``) or a dotted module name importable from the current folder.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from typing import Any

CONTRACT = (
    "CALLABLE takes no arguments and returns (model, args), (model, args, kwargs) or a dict "
    "{'model': ..., 'args': (...), 'kwargs': {...}, 'dynamic_shapes': ..., "
    "'input_names': [...], 'output_names': [...]} (only model and args required)"
)
_KEYS = {"model", "args", "kwargs", "dynamic_shapes", "input_names", "output_names"}


class TargetError(Exception):
    """The target cannot be loaded or its callable breaks the contract (exit code 2)."""


@dataclass
class Target:
    model: Any
    args: tuple
    kwargs: dict = field(default_factory=dict)
    dynamic_shapes: Any = None
    input_names: list | None = None
    output_names: list | None = None


def load(spec: str) -> Target:
    """Imports ``MODULE_OR_FILE:CALLABLE``, calls it, checks what it returned."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise TargetError(f"{spec!r}: expected MODULE_OR_FILE:CALLABLE, e.g. mymodels.py:make_model.")
    module = import_module_or_file(where)
    func = module
    for part in name.split("."):
        if not hasattr(func, part):
            raise TargetError(f"{where!r} has no attribute {name!r}.")
        func = getattr(func, part)
    if not callable(func):
        raise TargetError(f"{spec!r} is not callable: {CONTRACT}.")
    return _check(spec, func())


def import_module_or_file(where: str):
    """The module ``where`` names: a ``.py`` file (its folder put on ``sys.path``) or a dotted
    name importable from the current folder; :class:`TargetError` when neither."""
    if where.endswith(".py") or os.path.sep in where or os.path.isfile(where):
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise TargetError(f"File {where!r} does not exist.")
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module_name = os.path.splitext(os.path.basename(path))[0]
        loaded = sys.modules.get(module_name)
        if loaded is not None and os.path.abspath(getattr(loaded, "__file__", "") or "") == path:
            return loaded
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as e:
        if e.name and where.startswith(e.name):
            raise TargetError(f"Module {where!r} not found (neither a .py file nor importable).") from e
        raise


def _check(spec: str, value) -> Target:
    import torch

    if isinstance(value, dict):
        unknown = set(value) - _KEYS
        if unknown or "model" not in value or "args" not in value:
            raise TargetError(f"{spec} returned a dict with keys {sorted(value)}: {CONTRACT}.")
        target = Target(**value)
    elif isinstance(value, tuple) and len(value) in (2, 3):
        target = Target(*value)
    else:
        raise TargetError(f"{spec} returned {type(value).__name__}: {CONTRACT}.")
    if isinstance(target.args, torch.Tensor):
        target.args = (target.args,)
    if not isinstance(target.args, (tuple, list)) or not isinstance(target.kwargs or {}, dict):
        raise TargetError(f"{spec}: args must be a tuple and kwargs a dict: {CONTRACT}.")
    if not isinstance(target.model, torch.nn.Module):
        raise TargetError(f"{spec}: the model is a {type(target.model).__name__}, expected an "
                          f"nn.Module: {CONTRACT}.")
    target.args, target.kwargs = tuple(target.args), dict(target.kwargs or {})
    return target


def parse_dynamic(items: list[str], target: Target) -> Any:
    """``--dynamic NAME=AXIS[:DIM][,AXIS[:DIM]...]`` items -> dynamic_shapes by parameter name."""
    if not items:
        return target.dynamic_shapes
    if target.dynamic_shapes is not None:
        raise TargetError("The callable returned dynamic_shapes and --dynamic was given: use one.")
    spec: dict[str, dict[int, str]] = {}
    for item in items:
        name, sep, axes = item.partition("=")
        if not sep or not name or not axes:
            raise TargetError(f"--dynamic {item!r}: expected NAME=AXIS[:DIM], e.g. x=0:batch.")
        for axis_text in axes.split(","):
            axis, _, dim = axis_text.partition(":")
            try:
                index = int(axis)
            except ValueError:
                raise TargetError(f"--dynamic {item!r}: axis {axis!r} is not an integer.") from None
            spec.setdefault(name, {})[index] = dim or f"{name}_dim{index}"
    return spec
