"""Validation of the converted graph against ONNX's schemas, before the model is returned.

A converter that emits an unknown op, an attribute or input count its schema does not
allow, an axis out of range, mixed element types, or a result whose rank differs from
torch's would otherwise produce a model that onnx's checker or onnxruntime rejects later,
far from the cause. Here the graph is checked once, without its weights (large
initializers become typed inputs, so nothing is copied), by onnx's checker and its strict
shape inference, with torch's shape of every FX result declared: a disagreement is a
``ConverterOutputError`` naming the converter and the FX node that produced the node.
Nodes of custom domains (onnxruntime contrib ops, a pack's own domain) are not known to
onnx, which checks the nodes around them only.
"""

from __future__ import annotations

import re

import onnx

from tonnx._errors import ConverterOutputError
from tonnx.builder import _constants, _proto

#: Initializers up to this size keep their values (shape inference reads Reshape's shape).
KEPT_VALUES_MAX_BYTES = 8192
_NODE_NAME = re.compile(r"node name: ([^)\s]+)\)|Name: ([^\s]+) OpType|node \(([^)\s]+)\)")


def validate(g) -> None:
    """Raises ConverterOutputError when the graph of ``g`` is not valid ONNX."""
    model = checked_model(g)
    try:
        onnx.checker.check_model(model)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        raise _blame(g, str(e)) from None


def checked_model(g) -> onnx.ModelProto:
    """The model of ``g`` as onnx checks it: large weights become typed inputs."""
    model = onnx.ModelProto()
    model.ir_version = g.ir_version or onnx.IR_VERSION
    for domain, version in g.opsets.items():
        model.opset_import.add(domain=domain, version=version)
    graph = model.graph
    graph.name = "checked"
    for name in g.inputs:
        _proto._fill_value_info(graph.input.add(), name, g)
    for name, value in g.constants.items():
        if _constants.has_data(value) and _proto.nbytes(value) <= KEPT_VALUES_MAX_BYTES:
            _proto._fill_tensor(graph.initializer.add(), name, value, None)
        else:
            _proto._fill_value_info(graph.input.add(), name, g)
    unsized: set[str] = set()  # results whose onnx sizes may follow a node's unlike torch's
    for node in g.nodes:
        _proto._fill_node(graph.node.add(), node, None)
        sized = not _sizes_differ(node) and not any(i in unsized for i in node.inputs)
        if not sized:
            unsized.update(node.outputs)
        for out in node.outputs:
            if out and g.shapes.get(out) is not None and out not in g.outputs:
                _fill_torch_shape(graph.value_info.add(), out, g, sized)
    for name in g.outputs:
        _fill_torch_shape(graph.output.add(), name, g, name not in unsized)
    for body in g.functions.values():  # checked where they are called
        _proto.fill_function(model.functions.add(), body)
    return model


#: ops whose output sizes onnx's shape inference computes unlike runtimes and torch
_POOLS = frozenset({"MaxPool", "AveragePool", "LpPool"})


def _sizes_differ(node) -> bool:
    """True for a pooling with ceil_mode (onnx's inference counts a last window starting in
    the padding, torch and onnxruntime do not)."""
    return node.op_type in _POOLS and not node.domain and bool((node.attributes or {}).get("ceil_mode"))


def _fill_torch_shape(vi: onnx.ValueInfoProto, name: str, g, sized: bool = True) -> None:
    """Type, rank and torch's static sizes of ``name`` (symbolic dimensions left unknown).

    A converter whose result contradicts torch's static size (a Transpose of a 4x3 tensor
    declared 4x3) fails strict inference here, naming it, instead of making onnxruntime
    warn at run time. Nodes whose sizes onnx infers unlike runtimes (MaxPool's ceil_mode
    windows), and the nodes after them, are checked for type and rank only.
    """
    vi.name = name
    tensor_type = vi.type.tensor_type
    tensor_type.elem_type = g.get_type(name)
    shape = g.get_shape(name)
    if shape is not None:
        proto_shape = tensor_type.shape
        proto_shape.SetInParent()
        for d in shape:
            dim = proto_shape.dim.add()
            if sized and type(d) is int:
                dim.dim_value = d


def _blame(g, message: str) -> ConverterOutputError:
    node = _node_named(g, message)
    if node is None:
        where = "a node of the converted graph"
    else:
        meta = node.metadata or {}
        where = (
            f"node {node.name!r} ({node.op_type}) made by converter "
            f"{meta.get('pkg.tonnx.converter', '?')} for FX node {meta.get('pkg.tonnx.fx_node', '?')}"
        )
    first_line = message.strip().splitlines()[0] if message.strip() else message
    if "existing shape differ" in first_line:
        first_line += " (onnx computes the first size from the node's inputs; torch gives the second)"
    return ConverterOutputError(
        f"The converted graph is not valid ONNX: {where}: {first_line}\n"
        f"The converter must emit nodes its ONNX schema allows (op, attributes, inputs, "
        f"types, axes) with the rank and dtype torch gives; fix it, or raise "
        f"tonnx.UnsupportedError for this case. (to_onnx(..., validate=False) skips this check.)"
    )


def _node_named(g, message: str):
    match = _NODE_NAME.search(message)
    name = next((m for m in match.groups() if m), None) if match else None
    if name is None:
        return None
    for node in g.nodes:
        if node.name == name:
            return node
    return None
