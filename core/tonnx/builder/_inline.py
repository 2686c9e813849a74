"""Inlining an ``onnx.FunctionProto`` body into a builder, renaming its results."""

from __future__ import annotations

from onnx import helper

from tonnx._errors import TonnxError


def inline_function(g, function, inputs: list[str], outputs: list[str], *, prefix: str):
    if len(inputs) > len(function.input) or len(outputs) != len(function.output):
        raise TonnxError(
            f"Function {function.name!r} takes {len(function.input)} inputs and "
            f"{len(function.output)} outputs, got {len(inputs)} and {len(outputs)}."
        )
    for opset in function.opset_import:
        if opset.domain and opset.domain not in g.opsets:
            g.add_domain(opset.domain, opset.version)
    names = dict(zip(function.input, inputs))
    for missing in function.input[len(inputs):]:
        names[missing] = ""
    names.update(zip(function.output, outputs))
    prefix = prefix or function.name
    for node in function.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if any(a.ref_attr_name for a in node.attribute):
            raise TonnxError(f"Function {function.name!r} uses attribute references; not supported.")
        node_inputs = [names.get(i, i) if i else "" for i in node.input]
        node_outputs = []
        for o in node.output:
            if o not in names:
                names[o] = g.unique_name(f"{prefix}_{o}")
            node_outputs.append(names[o])
        g.make_node(
            node.op_type,
            node_inputs,
            node_outputs,
            domain=node.domain,
            name=prefix,
            **attrs,
        )
    return tuple(outputs)
