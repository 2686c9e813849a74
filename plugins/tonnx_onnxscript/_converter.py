"""TorchlibConverter: one torchlib function used as a tonnx converter.

An instance is the ``function`` of a ``tonnx.Converter``: the interpreter calls it with
``(g, sts, outputs, *args, **kwargs)`` like any converter. It turns tonnx's arguments into
what torchlib expects (``onnx_ir.Value`` for tensors, ONNX dtype ints for torch dtypes, as
torch.onnx passes them), runs the torchlib function on a fresh tape bound to ``g`` and
returns the names of its results; the interpreter then sets their types from torch's meta
and checks them.
"""

from __future__ import annotations

from typing import Any

import onnx_ir as ir
import torch
from onnxscript import values

from tonnx import ConversionError, TonnxError, UnsupportedError
from tonnx.converters import onnx_type_from_torch

try:
    from tonnx.converters import named
except ImportError:  # a tonnx whose interpreter aliases any returned name

    def named(g, result: str, output: str) -> str:
        return result


from ._rebind import Rebinder
from ._tape import Tape


class AliasConverter:
    """An op torchlib lacks, converted as the torchlib op it maps to (see _aliases.py)."""

    def __init__(self, key: str, alias, target: TorchlibConverter):
        self.key = key
        self.alias = alias
        self.target = target
        self.__module__ = alias.__module__
        self.__qualname__ = f"{alias.__name__}->{target.__qualname__}"

    def __call__(self, g, sts, outputs, *args, **kwargs):
        mapped = self.alias(*args, **kwargs)
        args, kwargs = mapped[:2]
        if len(mapped) == 2:
            return self.target(g, sts, outputs, *args, **kwargs)
        count = len(self.target.schema_returns())
        result = self.target(g, sts, [""] * count, *args, **kwargs)[mapped[2]]
        return named(g, result, outputs[0])


class TorchlibConverter:
    """Converts the op ``key`` with ``function`` (a torchlib OnnxFunction or traced function)."""

    def __init__(self, key: str, function: Any, refusal=None):
        self.key = key
        self.function = function
        #: (g, outputs, args, kwargs) -> the reason torchlib is wrong for this call, or None
        self.refusal = refusal
        # what tonnx's metadata and `tonnx explain` show: the torchlib function itself
        self.__module__ = getattr(function, "__module__", "onnxscript")
        self.__qualname__ = getattr(function, "__name__", repr(function))
        self.__doc__ = getattr(function, "__doc__", None)

    def __repr__(self) -> str:
        return f"TorchlibConverter({self.key!r}, {self.__module__}.{self.__qualname__})"

    def __call__(self, g, sts, outputs, *args, **kwargs):
        if self.refusal is not None:
            reason = self.refusal(g, outputs, args, kwargs)
            if reason:
                raise UnsupportedError(f"{self.key} through the onnxscript fallback: {reason}.")
        strings = self._strings()
        _check_real(self.key, g, sts, args, kwargs, strings)
        tape = Tape(g, prefix=g.node_prefix)
        args = [a if i in strings else _argument(tape, a) for i, a in enumerate(args)]
        kwargs = {
            k: (-1 if k == "dtype" and v is None else v if k in strings else _argument(tape, v))
            for k, v in kwargs.items()
        }
        try:
            if isinstance(self.function, values.OnnxFunction):
                result = tape.call_function(self.function, args, kwargs)
            else:
                result = Rebinder(tape).rebind(self.function)(*args, **kwargs)
        except TonnxError as e:
            if isinstance(e, UnsupportedError):
                raise UnsupportedError(f"{self.key} by torchlib's {self._name()}: {e}") from e
            raise
        except Exception as e:
            raise ConversionError(
                f"onnxscript's torchlib function {self._name()} failed to convert {self.key}: "
                f"{type(e).__name__}: {e}"
            ) from e
        names = _results(tape, result, outputs, self._name())
        return names[0] if len(outputs) == 1 else names

    def schema_returns(self) -> list:
        return list(_schema(self.key).returns)

    def _strings(self) -> frozenset:
        found = self.__dict__.get("_string_params")
        if found is None:
            found = self.__dict__["_string_params"] = _string_parameters(self.key)
        return found

    def _name(self) -> str:
        return f"{self.__module__}.{self.__qualname__}"


_COMPLEX = frozenset({14, 15})  # ONNX COMPLEX64, COMPLEX128


def _check_real(key: str, g, sts, args, kwargs, strings: frozenset) -> None:
    names = [a for i, a in enumerate(args) if type(a) is str and i not in strings]
    names += [v for k, v in kwargs.items() if type(v) is str and k not in strings]
    if any(d in _COMPLEX for d in sts.dtypes) or any(g.get_type(n) in _COMPLEX for n in names):
        raise UnsupportedError(
            f"{key} on complex tensors: the onnxscript fallback converts real-valued ops only."
        )


def _string_parameters(key: str) -> frozenset:
    """Positions and names of the op's ``str`` parameters (``approximate="tanh"``): kept as
    python strings, where every other ``str`` argument is the name of a tonnx result."""
    schema = _schema(key)
    if schema is None:
        return frozenset()
    found = set()
    for i, arg in enumerate(schema.arguments):
        kind = arg.type
        inner = kind.getElementType() if isinstance(kind, torch.OptionalType) else kind
        if isinstance(inner, torch.StringType):
            found.update((i, arg.name))
    return frozenset(found)


def _schema(key: str):
    """torch's FunctionSchema of the op ``key`` (None when torch has no such op)."""
    ns, _, rest = key.partition("::")
    name, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, ns, None), name, None)
    return getattr(getattr(packet, overload, None), "_schema", None)


def _argument(tape: Tape, arg):
    """A tonnx argument as torch.onnx hands it to torchlib."""
    if type(arg) is str:
        return tape.value(arg)
    if isinstance(arg, (list, tuple)):
        return [_argument(tape, a) for a in arg]
    if isinstance(arg, torch.dtype):
        return onnx_type_from_torch(arg)
    if isinstance(arg, (torch.device, torch.memory_format, torch.layout)):
        return str(arg)
    return arg


def _results(tape: Tape, result, outputs: list[str], name: str) -> tuple[str, ...]:
    """The torchlib results under the names the interpreter asked for."""
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(items) == 1 and isinstance(items[0], ir.Value) and items[0].name in tape.sequences:
        # a sequence (SplitToSequence) where the op has several tensor outputs
        items = [tape.call_op("SequenceAt", "", 18, (items[0], i), {}) for i in range(len(outputs))]
    if len(items) != len(outputs):
        raise ConversionError(
            f"torchlib function {name} returned {len(items)} result(s), the op has {len(outputs)}."
        )
    names = []
    for item, output in zip(items, outputs):
        if isinstance(item, ir.Value):
            found = item.name
        elif isinstance(item, (bool, int, float)):
            found = tape.constant(item, _python_dtype(item)).name
        else:
            raise ConversionError(f"torchlib function {name} returned {item!r}, not a tensor.")
        names.append(named(tape.g, found, output))
    return tuple(names)


def _python_dtype(value) -> ir.DataType:
    if isinstance(value, bool):
        return ir.DataType.BOOL
    return ir.DataType.INT64 if isinstance(value, int) else ir.DataType.FLOAT
