"""``torch._higher_order_ops.while_loop`` as an ONNX Loop without a trip count.

``while_loop(cond_fn, body_fn, carried_inputs, additional_inputs)`` runs ``body_fn`` while
``cond_fn`` holds. ONNX's Loop tests its condition after each iteration, as the body's
first output, and takes the first one as an input: ``cond_fn`` is converted twice, on the
initial values in the enclosing graph and on the new values at the end of the body. The
additional inputs (weights, values the functions closed over) are read from the
enclosing graph. A carried Python int (``while_loop(..., (0, x))``) is a 0-d int64 tensor.
"""

from __future__ import annotations

from onnx import TensorProto

from tonnx._errors import UnsupportedError
from tonnx.pipeline.interpret._values import represented
from tonnx.pipeline.interpret.control_flow import _bodies


def convert_while_loop(interp, gm, node) -> None:
    cond_node, body_node, carried, additional = node.args[:4]
    if len(node.args) > 4 or node.kwargs:
        raise UnsupportedError(
            f"while_loop node {node.format_node()} has arguments beyond (cond_fn, body_fn, "
            f"carried_inputs, additional_inputs), which this tonnx does not know; "
            f"report it with the torch version."
        )
    cond_fn = _bodies.submodule(gm, cond_node, "while_loop")
    body_fn = _bodies.submodule(gm, body_node, "while_loop")
    info = interp.namer.info(node)
    parent = interp.g
    holders = _bodies.placeholders(body_fn)
    _bodies.start(interp, parent, node, "while_loop")
    initial = [
        _bodies.as_tensor(parent, interp.map(c), represented(*_meta(interp, p))[0])
        for c, p in zip(carried, holders)
    ]
    outer = [interp.map(a) for a in additional]
    first = _bodies.run(interp, parent, cond_fn, initial + outer)
    _bodies.start(interp, parent, node, "while_loop")
    condition = _bodies.as_tensor(parent, first[0], TensorProto.BOOL)

    body = parent.make_subgraph()
    _bodies.start(interp, body, node, "while_loop")
    body.make_tensor_input(body.unique_name(f"{node.name}_iteration"), TensorProto.INT64, ())
    body.make_tensor_input(body.unique_name(f"{node.name}_condition"), TensorProto.BOOL, ())
    values = _bodies.inputs_like(interp, body, holders[: len(carried)], node.name)
    updated = _bodies.run(interp, body, body_fn, values + outer)
    again = _bodies.run(interp, body, cond_fn, _typed(body, updated, holders, interp) + outer)
    _bodies.start(interp, body, node, "while_loop")
    _bodies.declare_outputs(interp, body, cond_fn, again)
    _bodies.declare_outputs(interp, body, body_fn, updated)

    _bodies.start(interp, parent, node, "while_loop")
    outputs = _bodies.output_names(interp, parent, node, info)
    names = parent.make_node("Loop", ["", condition, *initial], outputs, body=body)
    _bodies.bind(interp, parent, node, info, names)


def _meta(interp, placeholder) -> tuple:
    info = interp.namer.info(placeholder)
    return info.dtypes[0], info.shapes[0]


def _typed(g, values: list, holders: list, interp) -> list:
    """The body's results as tensors, for the condition converted after it."""
    return [
        _bodies.as_tensor(g, v, represented(*_meta(interp, p))[0]) for v, p in zip(values, holders)
    ]
