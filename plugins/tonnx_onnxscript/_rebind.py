"""Private copies of torchlib's Python functions whose ``op.X(...)`` calls go to one tape.

torchlib's trace-only functions call ``op.Add(...)`` on onnxscript opsets, which send every
call to onnxscript's process-wide default evaluator. torch.onnx swaps that global for the
duration of a call (``onnxscript.evaluator.default_as``): not thread-safe, and it changes
onnxscript for everyone. Here nothing of onnxscript is modified: for one conversion, the
functions torchlib reaches are re-created (same code objects) over a private globals
mapping in which opsets, onnxscript functions and torchlib modules are replaced by proxies
bound to that conversion's tape. The mapping is filled lazily, name by name, on first use.
"""

from __future__ import annotations

import types
from typing import Any

from onnxscript import values

#: Only torchlib's own Python code is re-created; everything else is used as it is.
TORCHLIB = "onnxscript.function_libs.torch_lib"


class Rebinder:
    """Turns torchlib objects into their counterparts bound to ``tape`` (one conversion)."""

    def __init__(self, tape):
        self.tape = tape
        self._done: dict[int, Any] = {}
        self._globals: dict[int, _Globals] = {}

    def rebind(self, obj: Any) -> Any:
        key = id(obj)
        found = self._done.get(key)
        if found is None:
            found = self._make(obj)
            self._done[key] = found
        return found

    def _make(self, obj: Any) -> Any:
        if isinstance(obj, values.Opset):
            return OpsetProxy(self.tape, obj)
        if isinstance(obj, values.OnnxFunction):
            return _FunctionCall(self.tape, obj)
        if isinstance(obj, values.TracedOnnxFunction):
            return self.rebind(obj.func)
        if isinstance(obj, types.FunctionType) and _is_torchlib(obj.__module__):
            copy = types.FunctionType(
                obj.__code__, self._globals_of(obj), obj.__name__, obj.__defaults__, obj.__closure__
            )
            copy.__kwdefaults__ = obj.__kwdefaults__
            return copy
        if isinstance(obj, types.ModuleType) and _is_torchlib(obj.__name__):
            return _ModuleProxy(self, obj)
        return obj

    def _globals_of(self, function: types.FunctionType) -> _Globals:
        source = function.__globals__
        found = self._globals.get(id(source))
        if found is None:
            found = _Globals(self, source)
            self._globals[id(source)] = found
        return found


def _is_torchlib(module: str | None) -> bool:
    return bool(module) and module.startswith(TORCHLIB)


class _Globals(dict):
    """A module's globals seen through a Rebinder; a name is rebound when first read.

    CPython reads the globals of a function through ``__getitem__`` (so ``__missing__``)
    when they are not an exact dict; a name not here falls through to the builtins.
    """

    def __init__(self, rebinder: Rebinder, source: dict):
        super().__init__(__builtins__=source.get("__builtins__", __builtins__))
        self._rebinder = rebinder
        self._source = source

    def __missing__(self, name: str):
        value = self._rebinder.rebind(self._source[name])  # KeyError -> builtins
        self[name] = value
        return value


class _ModuleProxy:
    """``common_ops.cast_to`` with ``common_ops`` a torchlib module: attributes rebound."""

    def __init__(self, rebinder: Rebinder, module: types.ModuleType):
        self._rebinder = rebinder
        self._module = module

    def __getattr__(self, name: str):
        return self._rebinder.rebind(getattr(self._module, name))


class OpsetProxy:
    """``op.Add(x, y)`` recorded on the tape with the schema of the opset torchlib chose."""

    def __init__(self, tape, opset: values.Opset):
        self._tape = tape
        self._opset = opset

    @property
    def domain(self) -> str:
        return self._opset.domain

    @property
    def version(self) -> int:
        return self._opset.version

    def __getattr__(self, op_type: str):
        if op_type.startswith("__"):
            raise AttributeError(op_type)
        tape, domain, version = self._tape, self._opset.domain, self._opset.version

        def call(*args, **kwargs):
            return tape.call_op(op_type, domain, version, args, kwargs)

        call.__name__ = op_type
        return call


class _FunctionCall:
    """A call to an onnxscript (script) function from traced code: inlined by the tape."""

    def __init__(self, tape, function: values.OnnxFunction):
        self._tape = tape
        self._function = function

    def __call__(self, *args, **kwargs):
        return self._tape.call_function(self._function, args, kwargs)
