"""``tonnx.pretty``: a model as text a person reads (what ``tonnx show`` prints).

One line per input, initializer, node and output; each node line ends with the converter
that emitted it (the node's ``pkg.tonnx.converter`` metadata), so a wrong node leads
straight to the function to fix.
"""

from __future__ import annotations

import os
from typing import Any

#: Initializers with at most this many elements are printed with their values.
SMALL_CONSTANT = 8


def pretty(model: Any, *, max_nodes: int | None = None) -> str:
    """The text form of an ``onnx.ModelProto`` (or a path to one).

    ``max_nodes`` cuts the node list (``None``: all of them); a cut says how many were left out.
    """
    import onnx

    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(os.fspath(model), load_external_data=False)
    graph = model.graph
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    lines = [f"model {graph.name or '<unnamed>'} (ir {model.ir_version}; opsets {opsets})"]
    if model.producer_name:
        lines.append(f"producer: {model.producer_name} {model.producer_version}".rstrip())
    for prop in model.metadata_props:
        lines.append(f"metadata {prop.key}: {_one_line(prop.value, 100)}")
    lines.append(f"inputs ({len(graph.input)}):")
    lines.extend(f"  {_value_info(v)}" for v in graph.input)
    lines.append(f"initializers ({len(graph.initializer)}):")
    lines.extend(f"  {_initializer(t)}" for t in graph.initializer)
    nodes = list(graph.node)
    shown = nodes if max_nodes is None else nodes[:max_nodes]
    lines.append(f"nodes ({len(nodes)}):")
    lines.extend(f"  {_node(n)}" for n in shown)
    if len(shown) < len(nodes):
        lines.append(f"  ... {len(nodes) - len(shown)} more node(s)")
    lines.append(f"outputs ({len(graph.output)}):")
    lines.extend(f"  {_value_info(v)}" for v in graph.output)
    if model.functions:
        lines.append(f"functions ({len(model.functions)}):")
        for f in model.functions:
            lines.append(f"  {f.domain}.{f.name}({', '.join(f.input)}) -> {', '.join(f.output)}: "
                         f"{len(f.node)} node(s)")
    return "\n".join(lines)


def _dtype_name(elem_type: int) -> str:
    import onnx

    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"type{elem_type}"


def _value_info(v) -> str:
    t = v.type
    if not t.HasField("tensor_type"):
        return f"{v.name}: {t.WhichOneof('value') or 'unknown type'}"
    tt = t.tensor_type
    if not tt.HasField("shape"):
        return f"{v.name}: {_dtype_name(tt.elem_type)}[?]"
    dims = [d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?") for d in tt.shape.dim]
    return f"{v.name}: {_dtype_name(tt.elem_type)}[{', '.join(dims)}]"


def _initializer(t) -> str:
    import onnx.numpy_helper

    text = f"{t.name}: {_dtype_name(t.data_type)}[{', '.join(str(d) for d in t.dims)}]"
    n = 1
    for d in t.dims:
        n *= d
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return f"{text} (external data)"
    if n <= SMALL_CONSTANT:
        try:
            values = [_short(v) for v in onnx.numpy_helper.to_array(t).reshape(-1).tolist()]
            text += f" = [{', '.join(values)}]" if t.dims else f" = {values[0]}"
        except Exception:  # exotic dtypes numpy cannot show: the shape is enough
            pass
    return text


def _attribute(a) -> str:
    import onnx

    value = onnx.helper.get_attribute_value(a)
    if a.type == onnx.AttributeProto.GRAPH:
        return f"{a.name}=<graph {len(value.node)} node(s)>"
    if a.type == onnx.AttributeProto.TENSOR:
        return f"{a.name}=<tensor {_dtype_name(value.data_type)}{list(value.dims)}>"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return f"{a.name}={_one_line(repr(value), 60)}"


def _node(n) -> str:
    op = f"{n.domain}.{n.op_type}" if n.domain else n.op_type
    attrs = ", ".join(_attribute(a) for a in n.attribute)
    text = f"{', '.join(n.output)} = {op}({', '.join(n.input)}"
    text += f"; {attrs})" if attrs else ")"
    converter = next((p.value for p in n.metadata_props if p.key == "pkg.tonnx.converter"), "")
    return f"{text}  # {converter}" if converter else text


def _short(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
