"""Builder -> ``onnx.ModelProto``: the only place where weights are copied (once)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper

from . import _constants

#: Tensors at least this large go to the external data file when one is used.
EXTERNAL_MIN_BYTES = 1024


class ExternalDataWriter:
    """Streams large initializers into one data file next to the model.

    Each tensor's bytes are written as soon as its proto is made, so the model proto never
    holds them and a model over 2 GB serializes without protobuf's size limit.
    """

    def __init__(self, path: str, location: str):
        self.location = location
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
        self.offset = 0

    def write(self, proto: TensorProto, data: np.ndarray) -> None:
        # 4 KiB alignment lets runtimes memory-map each tensor
        padding = (-self.offset) % 4096
        if padding:
            self._file.write(b"\0" * padding)
            self.offset += padding
        buffer = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        self._file.write(buffer.data)
        proto.data_location = TensorProto.EXTERNAL
        for key, value in (
            ("location", self.location),
            ("offset", str(self.offset)),
            ("length", str(buffer.nbytes)),
        ):
            entry = proto.external_data.add()
            entry.key = key
            entry.value = value
        self.offset += buffer.nbytes

    def close(self) -> None:
        self._file.close()


def to_model_proto(
    g, *, external_data: ExternalDataWriter | None = None, doc_string: str = "", **_: Any
) -> onnx.ModelProto:
    from .. import __version__

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
    return model


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


def _fill_tensor(proto: TensorProto, name: str, value, external_data) -> None:
    data = _constants.as_numpy(value)
    proto.name = name
    proto.dims.extend(data.shape)
    proto.data_type = _constants.elem_type(value)
    if external_data is not None and data.nbytes >= EXTERNAL_MIN_BYTES:
        external_data.write(proto, data)
    else:
        proto.raw_data = data.tobytes()


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
        _fill_graph(attr.g, value, key, external_data)
    elif isinstance(value, (list, tuple)) and value and all(type(v) is int for v in value):
        attr.type = AttributeProto.INTS
        attr.ints.extend(value)
    else:
        attr.CopyFrom(helper.make_attribute(key, value))


def write_model(model: onnx.ModelProto, filename: str) -> None:
    """Writes ``model`` to ``filename`` through a temporary file, renamed when complete."""
    tmp = f"{filename}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(model.SerializeToString())
        os.replace(tmp, filename)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
