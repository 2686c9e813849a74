"""The tape: torchlib's op calls written into tonnx's GraphBuilder, with types and shapes.

torchlib code manipulates ``onnx_ir.Value`` objects (it reads ``.dtype`` and ``.shape``);
here each one is named after the tonnx result it stands for. Every op call becomes a node
of ``g`` right away; its outputs get their element type and shape from onnx's per-node
inference, so the next torchlib decision (and tonnx's passes) see exact types. Python
constants passed where the schema wants a tensor become (deduplicated) initializers typed
as torch.onnx does: like the tensor bound to the same type variable. Calls to onnxscript
script functions are inlined, node by node, through the same path.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
from onnx import TensorProto, helper, numpy_helper
from onnxscript import onnx_opset

from tonnx import UnsupportedError

from ._rebind import OpsetProxy

#: Constants up to this many elements are given to onnx's inference (shape data propagation).
_DATA_PROPAGATION_MAX = 4096

#: Ops whose meaning changed after opset 18 (the opset torchlib writes for), with the
#: opset of the change: torchlib's node would be read differently at a newer opset.
SEMANTIC_CHANGES = {"GridSample": 20, "DFT": 20, "GroupNormalization": 21}


@functools.cache
def op_signature(op_type: str, domain: str, version: int) -> ir.schemas.OpSignature:
    return ir.schemas.OpSignature.from_op_schema(onnx.defs.get_schema(op_type, version, domain))


class TapeValue(ir.Value):
    """An ir.Value whose arithmetic (``x * 2``, as torchlib writes it) goes to its tape.

    onnx_ir otherwise sends these operators to one process-wide handler.
    """

    __slots__ = ("_handler",)

    def __init__(self, handler, **kwargs):
        super().__init__(**kwargs)
        self._handler = handler

    def _get_magic_handler(self):
        return self._handler

    # comparisons as torch.onnx's symbolic tensors have them (torchlib writes `self < eps`);
    # no __eq__: values are compared by identity
    def __lt__(self, other):
        return self._handler.Less(self, other)

    def __le__(self, other):
        return self._handler.LessOrEqual(self, other)

    def __gt__(self, other):
        return self._handler.Greater(self, other)

    def __ge__(self, other):
        return self._handler.GreaterOrEqual(self, other)

    def __pow__(self, other):
        return self._handler.Pow(self, other)


class Tape:
    """Records the ops of one torchlib call into ``g`` (see the module docstring)."""

    def __init__(self, g, *, prefix: str):
        self.g = g
        self.prefix = prefix
        self._target = g.main_opset
        self._arithmetic = OpsetProxy(self, onnx_opset.opset18)
        #: results that are sequences of tensors (SplitToSequence), with their element type
        self.sequences: dict[str, int] = {}

    # -- values ---------------------------------------------------------------------------------

    def value(self, name: str) -> ir.Value:
        """The ir.Value standing for tonnx result ``name`` (type and shape from ``g``)."""
        g = self.g
        if name in self.sequences:
            elem = ir.SequenceType(ir.TensorType(ir.DataType(self.sequences[name])))
            return TapeValue(self._arithmetic, name=name, type=elem)
        shape = g.get_shape(name)
        dims = None if shape is None else ir.Shape([d if type(d) is int else str(d) for d in shape])
        elem = ir.TensorType(ir.DataType(g.get_type(name)))
        return TapeValue(self._arithmetic, name=name, type=elem, shape=dims)

    def constant(self, value: Any, dtype: ir.DataType) -> ir.Value:
        array = np.asarray(value, dtype=dtype.numpy())
        return self.value(self.g.make_initializer("", array))

    # -- ops ------------------------------------------------------------------------------------

    def call_op(self, op_type: str, domain: str, version: int, args: Sequence, kwargs: Mapping):
        """``op.<op_type>(*args, **kwargs)`` from torchlib: one node of ``g``."""
        if domain == "" and op_type == "Constant":
            return self._constant_op(args, kwargs)
        signature = op_signature(op_type, domain, version)
        inputs, attrs = _bind(signature, args, kwargs)
        tensors = self._tensor_inputs(signature, inputs)
        count = _output_count(signature, attrs)
        outputs = self.emit(op_type, domain, tensors, attrs, count)
        return outputs[0] if len(outputs) == 1 else outputs

    def emit(self, op_type: str, domain: str, inputs: list, attrs: dict, count: int) -> list:
        """Adds the node to ``g``; returns its outputs as typed ir.Values."""
        g = self.g
        if domain == "":
            changed = SEMANTIC_CHANGES.get(op_type)
            if changed is not None and self._target >= changed:
                raise UnsupportedError(
                    f"torchlib emits {op_type} as of opset 18, whose meaning changed in opset "
                    f"{changed}; export with target_opset<{changed} to use the fallback for it."
                )
        names = [v.name if v is not None else "" for v in inputs]
        while names and not names[-1]:
            names.pop()
        attributes = {k: _attribute(v) for k, v in attrs.items() if v is not None}
        if domain and domain not in g.opsets:
            raise UnsupportedError(f"torchlib emits {domain}::{op_type}, a domain tonnx does not declare.")
        result = g.make_node(op_type, names, count, domain=domain, name=self.prefix, **attributes)
        outputs = [result] if type(result) is str else list(result)
        if not all(g.is_constant(o) for o in outputs):
            self._infer(op_type, domain, names, outputs, attributes)
        return [self.value(o) for o in outputs]

    def _infer(self, op_type, domain, inputs, outputs, attributes) -> None:
        g = self.g
        node = helper.make_node(op_type, inputs, outputs, domain=domain or None)
        node.attribute.extend(_attribute_proto(k, v) for k, v in attributes.items())
        types, data = {}, {}
        for name in inputs:
            if not name:
                continue
            if name in self.sequences:
                types[name] = helper.make_sequence_type_proto(
                    helper.make_tensor_type_proto(self.sequences[name], None)
                )
                continue
            shape = g.get_shape(name)
            types[name] = helper.make_tensor_type_proto(
                g.get_type(name), None if shape is None else [d if type(d) is int else str(d) for d in shape]
            )
            if g.is_constant(name) and shape is not None and np.prod(shape) <= _DATA_PROPAGATION_MAX:
                data[name] = numpy_helper.from_array(np.asarray(g.get_constant(name)), name)
        schema = onnx.defs.get_schema(op_type, g.opsets.get(domain, 1), domain)
        try:
            inferred = onnx.shape_inference.infer_node_outputs(
                schema, node, types, data, opset_imports=[helper.make_opsetid(d, v) for d, v in g.opsets.items()]
            )
        except Exception as e:
            raise UnsupportedError(
                f"torchlib's {op_type} node is not valid ONNX here ({type(e).__name__}: {e})"
            ) from e
        for name in outputs:
            proto = inferred.get(name)
            if proto is not None and proto.HasField("sequence_type"):
                self.sequences[name] = proto.sequence_type.elem_type.tensor_type.elem_type
                continue
            if proto is None or not proto.tensor_type.elem_type:
                continue
            g.types[name] = proto.tensor_type.elem_type
            if proto.tensor_type.HasField("shape"):
                dims = []
                for d in proto.tensor_type.shape.dim:
                    if d.HasField("dim_value"):
                        dims.append(d.dim_value)
                    elif d.HasField("dim_param"):
                        dims.append(d.dim_param)
                    else:
                        break
                else:
                    g.shapes[name] = tuple(dims)

    def _constant_op(self, args, kwargs) -> ir.Value:
        if args or len(kwargs) != 1:
            raise UnsupportedError(f"Constant with {args} {kwargs}: expected one value attribute.")
        (kind, value), = kwargs.items()
        if isinstance(value, ir.Attr):
            value = value.value
        if kind == "value":
            if isinstance(value, TensorProto):
                return self.value(self.g.make_initializer("", numpy_helper.to_array(value)))
            array = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
            return self.value(self.g.make_initializer("", array))
        dtype = {
            "value_int": ir.DataType.INT64,
            "value_ints": ir.DataType.INT64,
            "value_float": ir.DataType.FLOAT,
            "value_floats": ir.DataType.FLOAT,
        }.get(kind)
        if dtype is None:
            raise UnsupportedError(f"Constant({kind}=...) is not supported by the fallback.")
        return self.constant(list(value) if kind.endswith("s") else value, dtype)

    # -- python constants -----------------------------------------------------------------------

    def _tensor_inputs(self, signature, inputs: dict) -> list:
        """Flat node inputs; python constants and mixed lists turned into tensors."""
        binding = {}
        for name, arg in inputs.items():
            if isinstance(arg, ir.Value) and arg.dtype is not None:
                binding.setdefault(signature.params_map[name].type_constraint, arg.dtype)
        flat: list = []
        for name, arg in inputs.items():
            param = signature.params_map[name]
            if arg is None or isinstance(arg, ir.Value):
                flat.append(arg)
            elif param.variadic:
                items = list(arg) if isinstance(arg, (list, tuple)) else [arg]
                dtype = _dtype(param, items, binding)
                flat.extend(v if isinstance(v, ir.Value) else self.constant(v, dtype) for v in items)
            elif isinstance(arg, (list, tuple)) and any(isinstance(v, ir.Value) for v in arg):
                flat.append(self._concat(arg, _dtype(param, arg, binding)))
            elif isinstance(arg, (ir.TensorProtocol, np.ndarray)):
                array = arg.numpy() if hasattr(arg, "numpy") else arg
                flat.append(self.value(self.g.make_initializer("", np.asarray(array))))
            else:
                flat.append(self.constant(arg, _dtype(param, arg, binding)))
        return flat

    def _concat(self, items, dtype: ir.DataType) -> ir.Value:
        parts = []
        for v in items:
            if v is None:
                continue
            if isinstance(v, ir.Value):
                parts.append(self.call_op("Reshape", "", 18, (v, self.constant([-1], ir.DataType.INT64)), {}))
            else:
                parts.append(self.constant([v], dtype))
        return self.call_op("Concat", "", 18, tuple(parts), {"axis": 0})

    # -- script functions -----------------------------------------------------------------------

    def call_function(self, function, args: Sequence, kwargs: Mapping):
        """A call to an onnxscript script function: its body inlined, node by node."""
        signature = function.op_signature
        inputs, attrs = _bind(signature, args, kwargs)
        tensors = self._tensor_inputs(signature, inputs)
        proto = function.to_function_proto()
        return self.inline(proto, tensors, attrs)

    def inline(self, proto: onnx.FunctionProto, inputs: list, attrs: Mapping[str, Any]):
        defaults = {a.name: helper.get_attribute_value(a) for a in proto.attribute_proto}
        bound = {**defaults, **{k: v for k, v in attrs.items() if v is not None}}
        env: dict[str, ir.Value | None] = dict(zip(proto.input, inputs))
        for node in proto.node:
            node_attrs = {}
            for a in node.attribute:
                if a.ref_attr_name:
                    if a.ref_attr_name in bound:
                        node_attrs[a.name] = bound[a.ref_attr_name]
                elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                    raise UnsupportedError(
                        f"onnxscript function {proto.name!r} has a subgraph ({node.op_type}); "
                        f"the fallback inlines straight-line functions only."
                    )
                else:
                    node_attrs[a.name] = helper.get_attribute_value(a)
            if node.domain == "" and node.op_type == "Constant":
                outs = [self._constant_op((), node_attrs)]
            else:
                if node.domain:
                    raise UnsupportedError(
                        f"onnxscript function {proto.name!r} calls {node.domain}::{node.op_type}."
                    )
                outs = self.emit(node.op_type, "", [env.get(i) if i else None for i in node.input], node_attrs, len(node.output))
            env.update(zip(node.output, outs))
        results = [env[o] for o in proto.output]
        return results[0] if len(results) == 1 else tuple(results)


def _bind(signature, args: Sequence, kwargs: Mapping) -> tuple[dict, dict]:
    """(inputs, attributes) by parameter name, as torch.onnx binds torchlib calls."""
    inputs: dict[str, Any] = {}
    attrs: dict[str, Any] = {}
    rest = list(args)
    for param in signature.params:
        if not isinstance(param, ir.schemas.AttributeParameter):
            if param.variadic:
                inputs[param.name] = tuple(rest) if rest else tuple(kwargs.get(param.name, ()))
                rest = []
            elif rest:
                inputs[param.name] = rest.pop(0)
            else:
                inputs[param.name] = kwargs.get(param.name)
            continue
        if rest:
            value = rest.pop(0)
        elif param.name in kwargs:
            value = kwargs[param.name]
        else:
            value = param.default if param.has_default else None
        if isinstance(value, ir.Attr):
            value = value.value
        if value is None:
            continue
        if param.type == ir.AttributeType.FLOAT and isinstance(value, int):
            value = float(value)
        elif param.type == ir.AttributeType.FLOATS and isinstance(value, (list, tuple)):
            value = [float(v) for v in value]
        attrs[param.name] = value
    return inputs, attrs


def _output_count(signature, attrs: Mapping) -> int:
    if signature.domain == "":
        if signature.name == "BatchNormalization" and not attrs.get("training_mode", 0):
            return 1
        if signature.name == "Split":
            count = attrs.get("num_outputs")
            if not isinstance(count, int):
                raise UnsupportedError("torchlib's Split without num_outputs: unknown output count.")
            return count
    return len(signature.outputs)


def _dtype(param, arg, binding) -> ir.DataType:
    """The element type of a python constant given for ``param`` (torch.onnx's rules)."""
    constraint = param.type_constraint
    if constraint in binding:
        return binding[constraint]
    if len(constraint.allowed_types) == 1:
        return next(iter(constraint.allowed_types)).dtype
    items = arg if isinstance(arg, (list, tuple)) else [arg]
    for v in items:
        if isinstance(v, ir.Value) and v.dtype is not None:
            return v.dtype
    if not items:
        return ir.DataType.INT64
    if all(isinstance(v, bool) for v in items):
        return ir.DataType.BOOL
    if any(isinstance(v, float) for v in items):
        return ir.DataType.FLOAT
    if all(isinstance(v, (int, np.integer)) for v in items):
        return ir.DataType.INT64
    raise UnsupportedError(f"Cannot type the python constant {arg!r} given for input {param.name!r}.")


def _attribute(value: Any) -> Any:
    """A torchlib attribute value as tonnx's builder stores it."""
    if isinstance(value, ir.Attr):
        value = value.value
    if isinstance(value, ir.DataType):
        return int(value)
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (ir.TensorProtocol,)) and not isinstance(value, TensorProto):
        return ir.serde.serialize_tensor(value)
    if isinstance(value, np.ndarray):
        return numpy_helper.from_array(value)
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, np.integer, bool)) for v in value):
            return [int(v) for v in value]
        if all(isinstance(v, (int, float, np.number)) for v in value):
            return [float(v) for v in value]
        return list(value)
    if isinstance(value, (onnx.GraphProto, ir.Graph)) or hasattr(value, "function_ir"):
        raise UnsupportedError("torchlib passes a subgraph; the fallback does not support subgraphs.")
    return value


def _attribute_proto(name: str, value: Any) -> onnx.AttributeProto:
    if isinstance(value, list) and not value:
        return helper.make_attribute(name, [], attr_type=onnx.AttributeProto.INTS)
    return helper.make_attribute(name, value)
