"""Converters written in onnxscript: a ``Converter`` whose function is an ``@script`` function.

The function's parameters are the op's (ATen names, the seed design's authoring style,
without ``g, sts, outputs``); its tensor parameters receive the tonnx results, its attribute
parameters (python-typed: ``alpha: float``) the op's scalars. Its body is inlined into ``g``
(no local function): tonnx's passes then see every node, and the interpreter types the
results it asked for. onnxscript is not imported here; a function is recognized by its type.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from onnx import AttributeProto, FunctionProto, helper

from tonnx._errors import TonnxError, UnsupportedError
from tonnx.builder._dtypes import numpy_dtype


def is_script_function(function: Any) -> bool:
    """True for an ``onnxscript.OnnxFunction`` (what ``@onnxscript.script()`` returns)."""
    return type(function).__name__ == "OnnxFunction" and hasattr(function, "to_function_proto")


def as_converter(function: Any) -> Any:
    """The callable the interpreter calls: ``function`` itself unless it is a script function."""
    return ScriptConverter(function) if is_script_function(function) else function


class ScriptConverter:
    """Calls an onnxscript function as a converter: binds the op's arguments, inlines the body."""

    def __init__(self, function: Any):
        self.function = function
        self.proto: FunctionProto = function.to_function_proto()
        self.parameters = list(inspect.signature(function.function).parameters)
        self.defaults = {a.name: a for a in self.proto.attribute_proto}
        self.attributes = set(self.proto.attribute) | set(self.defaults)
        self.__module__ = getattr(function, "__module__", "onnxscript")
        self.__qualname__ = getattr(function, "__qualname__", self.proto.name)

    def __call__(self, g, sts, outputs, *args, **kwargs):
        bound = dict(zip(self.parameters, args))
        bound.update(kwargs)
        unknown = set(bound) - set(self.parameters)
        if unknown:
            raise TonnxError(
                f"onnxscript converter {self.proto.name!r} has no parameter(s) {sorted(unknown)}; "
                f"its parameters are the op's, by ATen name: {self.parameters}."
            )
        tensors = [v for v in bound.values() if type(v) is str]
        like = g.get_type(tensors[0]) if tensors else sts.dtype
        inputs = [self._input(g, bound.get(name), like) for name in self.proto.input]
        values = {k: v for k, v in bound.items() if k in self.attributes and v is not None}
        body = bind_attributes(self.proto, values)
        return g.make_nodes(body, inputs, [o or "" for o in outputs], prefix=g.node_prefix)

    def _input(self, g, value, like: int) -> str:
        if value is None or type(value) is str:
            return value or ""
        if isinstance(value, (bool, int, float)):
            # a python scalar given for a tensor parameter: typed like the tensor inputs
            return g.make_initializer("", np.asarray(value, dtype=numpy_dtype(like)))
        raise UnsupportedError(
            f"onnxscript converter {self.proto.name!r} cannot take {value!r} as a tensor input."
        )


def bind_attributes(proto: FunctionProto, values: dict[str, Any]) -> FunctionProto:
    """A copy of ``proto`` whose attribute references are replaced by ``values`` (or the
    function's defaults); a reference to an attribute given no value is dropped."""
    defaults = {a.name: a for a in proto.attribute_proto}
    body = FunctionProto()
    body.CopyFrom(proto)
    del body.attribute[:]
    del body.attribute_proto[:]
    for node in body.node:
        kept = []
        for attr in node.attribute:
            ref = attr.ref_attr_name
            if not ref:
                kept.append(attr)
            elif ref in values:
                kept.append(_attribute(attr.name, values[ref], attr.type))
            elif ref in defaults:
                value = AttributeProto()
                value.CopyFrom(defaults[ref])
                value.name = attr.name
                kept.append(value)
        del node.attribute[:]
        node.attribute.extend(kept)
    return body


def _attribute(name: str, value: Any, kind: int) -> AttributeProto:
    if kind == AttributeProto.FLOAT:
        value = float(value)
    elif kind == AttributeProto.INT:
        value = int(value)
    elif kind == AttributeProto.FLOATS:
        value = [float(v) for v in value]
    elif kind == AttributeProto.INTS:
        value = [int(v) for v in value]
    return helper.make_attribute(name, value)
