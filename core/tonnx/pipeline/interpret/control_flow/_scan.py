"""``scan`` and ``map`` as an ONNX Scan over dimension 0.

``scan(combine_fn, init, xs, additional_inputs)``: ``combine_fn(*carries, *x_slices,
*additional)`` returns the next carries then one slice of each stacked output. torch.export
has already moved the scanned dimension to 0 and flipped ``xs`` and the stacked outputs
for ``reverse=True`` (``movedim``/``flip`` nodes around the op), so the op itself always
scans dimension 0 forward, which is ONNX Scan's default. ``map_impl(body_fn, xs, args)``
is a scan without carries. The additional inputs are read from the enclosing graph.
"""

from __future__ import annotations

from tonnx._errors import UnsupportedError
from tonnx.pipeline.interpret.control_flow import _bodies


def convert_scan(interp, gm, node) -> None:
    combine_node, init, xs, additional = node.args[:4]
    if len(node.args) > 4 or node.kwargs:
        raise UnsupportedError(
            f"scan node {node.format_node()} has arguments beyond (combine_fn, init, xs, "
            f"additional_inputs), which this tonnx does not know; report it with the torch "
            f"version."
        )
    combine_fn = _bodies.submodule(gm, combine_node, "scan")
    _scan(interp, node, combine_fn, list(init), list(xs), list(additional), "scan")


def convert_map(interp, gm, node) -> None:
    body_node, xs, args = node.args[:3]
    if len(node.args) > 3 or node.kwargs:
        raise UnsupportedError(
            f"map_impl node {node.format_node()} has arguments beyond (body_fn, xs, args), "
            f"which this tonnx does not know; report it with the torch version."
        )
    body_fn = _bodies.submodule(gm, body_node, "map")
    _scan(interp, node, body_fn, [], list(xs), list(args), "map")


def _scan(interp, node, fn, init: list, xs: list, additional: list, construct: str) -> None:
    if not xs:
        raise UnsupportedError(
            f"{construct} node {node.format_node()} scans no tensor: ONNX Scan needs one to "
            f"count its iterations."
        )
    info = interp.namer.info(node)
    parent = interp.g
    _bodies.start(interp, parent, node, construct)
    holders = _bodies.placeholders(fn)
    states = [
        _bodies.as_tensor(parent, interp.map(c), interp.namer.info(p).dtypes[0])
        for c, p in zip(init, holders)
    ]
    scanned = [interp.map(x) for x in xs]
    if any(type(x) is not str for x in scanned):
        raise UnsupportedError(f"{construct} node {node.format_node()} scans a non-tensor.")
    outer = [interp.map(a) for a in additional]

    body = parent.make_subgraph()
    _bodies.start(interp, body, node, construct)
    inputs = _bodies.inputs_like(interp, body, holders[: len(init) + len(xs)], node.name)
    results = _bodies.run(interp, body, fn, inputs + outer)
    _bodies.start(interp, body, node, construct)
    _bodies.declare_outputs(interp, body, fn, results)

    _bodies.start(interp, parent, node, construct)
    outputs = _bodies.output_names(interp, parent, node, info)
    names = parent.make_node(
        "Scan", [*states, *scanned], outputs, body=body, num_scan_inputs=len(scanned)
    )
    _bodies.bind(interp, parent, node, info, names)
