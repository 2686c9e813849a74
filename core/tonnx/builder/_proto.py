"""Builder -> ``onnx.ModelProto``; weights are copied once in memory, never for a file.

Where large initializers go (a data file, the model file after the proto) is the
``external_data`` sink ``pipeline/write/_sinks.py`` passes in."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper

from tonnx._errors import OutputFileError
from tonnx.builder import _constants, _packed4


def nbytes(value) -> int:
    """Size of a constant's data, known without reading it (also for ``meta`` tensors)."""
    if isinstance(value, np.ndarray):
        return _packed4.packed_nbytes(value) if _packed4.is_four_bit(value) else value.nbytes
    return value.numel() * value.element_size()


def tensor_array(value) -> np.ndarray:
    """A constant as a numpy array in ONNX's little-endian byte order, in whatever layout it
    has (a transposed view stays one: the file writer puts it in C order as it writes it)."""
    if not isinstance(value, np.ndarray):
        value = value.detach()
    data = _constants.as_numpy(value)
    if _packed4.is_four_bit(data):
        return _packed4.packed(data)
    if sys.byteorder != "little" and data.dtype.itemsize > 1:
        data = data.byteswap()
    return data


def tensor_bytes(value) -> memoryview:
    """The bytes of a constant as ONNX ``raw_data`` lays them out: a view of the tensor's
    memory (a copy only for a non-contiguous tensor, e.g. a weight transposed by folding)."""
    return contiguous(tensor_array(value)).reshape(-1).view(np.uint8).data


def no_data_error(name: str) -> OutputFileError:
    return OutputFileError(
        f"Initializer {name!r} is a tensor on the 'meta' device (no data): pass filename= and "
        f"weights= (safetensors files holding it) to to_onnx, or load the weights into the "
        f"model before exporting."
    )


_INT_OF_SIZE = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}


def contiguous(data: np.ndarray) -> np.ndarray:
    """``data`` in C order; a strided array is copied by torch (a blocked, multi-threaded
    transpose, 2-3x faster than numpy's on a transposed weight)."""
    if data.flags.c_contiguous:
        return data
    target = np.empty(data.shape, data.dtype)
    copy_into(target, data)
    return target


def copy_into(target: np.ndarray, data: np.ndarray) -> None:
    """``target[...] = data`` (same shape and dtype), by torch's copy for plain dtypes."""
    kind = _INT_OF_SIZE.get(data.dtype.itemsize)
    if kind is None or data.dtype == object or any(st < 0 for st in data.strides):
        np.copyto(target, data)
        return
    import torch

    torch.from_numpy(target.view(kind)).copy_(torch.from_numpy(data.view(kind)))


def to_model_proto(
    g, *, external_data: Any = None, doc_string: str = "", **_: Any
) -> onnx.ModelProto:
    from tonnx._version import __version__

    model = onnx.ModelProto()
    model.producer_name = "tonnx"
    model.producer_version = __version__
    if doc_string:
        model.doc_string = doc_string
    for domain, version in g.opsets.items():
        op = model.opset_import.add()
        op.domain = domain
        op.version = version
    model.ir_version = g.ir_version or helper.find_min_ir_version_for(
        list(model.opset_import), ignore_unknown=True
    )
    for key, value in g.metadata_props.items():
        entry = model.metadata_props.add()
        entry.key = key
        entry.value = value
    _fill_graph(model.graph, g, "main_graph", external_data)
    for body in g.functions.values():
        fill_function(model.functions.add(), body)
    return model


def fill_function(proto: onnx.FunctionProto, body) -> None:
    """A local function from its body's builder; a FunctionProto has no initializers,
    so its constants become ``Constant`` nodes ahead of the body."""
    proto.domain, proto.name = body.function_key
    proto.input.extend(body.inputs)
    proto.output.extend(body.outputs)
    for domain, version in body.opsets.items():
        proto.opset_import.add(domain=domain, version=version)
    for name, value in body.constants.items():
        node = proto.node.add(op_type="Constant", name=f"{name}_constant")
        node.output.append(name)
        attr = node.attribute.add(name="value", type=AttributeProto.TENSOR)
        _fill_tensor(attr.t, name, value, None)
    for node in body.nodes:
        _fill_node(proto.node.add(), node, None)


def _fill_graph(graph: onnx.GraphProto, g, name: str, external_data) -> None:
    graph.name = name
    for inp in g.inputs:
        _fill_value_info(graph.input.add(), inp, g)
    for name_, value in g.constants.items():
        _fill_tensor(graph.initializer.add(), name_, value, external_data)
    nodes = graph.node
    for node in g.nodes:
        _fill_node(nodes.add(), node, external_data)
    for out in g.outputs:
        _fill_value_info(graph.output.add(), out, g)


def _fill_value_info(vi: onnx.ValueInfoProto, name: str, g) -> None:
    vi.name = name
    tensor_type = vi.type.tensor_type
    tensor_type.elem_type = g.get_type(name)
    shape = g.get_shape(name)
    if shape is None:
        return
    proto_shape = tensor_type.shape
    proto_shape.SetInParent()
    for d in shape:
        dim = proto_shape.dim.add()
        if type(d) is int:
            dim.dim_value = d
        else:
            dim.dim_param = str(d)


def _fill_tensor(proto: TensorProto, name: str, value, sink) -> None:
    proto.name = name
    proto.dims.extend(value.shape)
    proto.data_type = _constants.elem_type(value)
    if sink is not None and sink.takes(value):
        sink.add(proto, name, value)
    elif not _constants.has_data(value):
        raise no_data_error(name)
    else:
        # the one copy protobuf requires (tobytes' temporary is freed at once)
        data = _constants.as_numpy(value)
        proto.raw_data = (_packed4.packed(data) if _packed4.is_four_bit(data) else data).tobytes()


def _fill_node(proto: onnx.NodeProto, node, external_data) -> None:
    proto.op_type = node.op_type
    proto.name = node.name
    if node.domain:
        proto.domain = node.domain
    proto.input.extend(node.inputs)
    proto.output.extend(node.outputs)
    for key, value in node.attributes.items():
        if value is None:
            continue
        _fill_attribute(proto.attribute.add(), key, value, external_data)
    if node.metadata:
        props = proto.metadata_props
        for key, value in node.metadata.items():
            entry = props.add()
            entry.key = key
            entry.value = value


def _fill_attribute(attr: AttributeProto, key: str, value, external_data) -> None:
    attr.name = key
    kind = type(value)
    if kind is int or kind is bool or isinstance(value, np.integer):
        attr.type = AttributeProto.INT
        attr.i = int(value)
    elif kind is float or isinstance(value, np.floating):
        attr.type = AttributeProto.FLOAT
        attr.f = float(value)
    elif kind is str:
        attr.type = AttributeProto.STRING
        attr.s = value.encode()
    elif kind is TensorProto:
        attr.type = AttributeProto.TENSOR
        attr.t.CopyFrom(value)
    elif hasattr(value, "nodes"):
        attr.type = AttributeProto.GRAPH
        sink = external_data if getattr(external_data, "subgraphs", False) else None
        _fill_graph(attr.g, value, key, sink)
    elif isinstance(value, (list, tuple)) and value and all(type(v) is int for v in value):
        attr.type = AttributeProto.INTS
        attr.ints.extend(value)
    else:
        attr.CopyFrom(helper.make_attribute(key, value))
