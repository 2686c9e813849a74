"""Step 3, interpret: a GraphBuilder filled by the converters, one FX node at a time."""

from __future__ import annotations


def interpret_program(ep, dim_names, *, opsets, registry, manager, config, dispatcher,
                      input_names, output_names, record=None):
    """(GraphBuilder, Interpreter) after the interpreter walked ``ep``; a missing converter
    goes to ``dispatcher.on_missing`` with the manager's error naming how to enable one."""
    from tonnx.builder import GraphBuilder
    from tonnx.pipeline.capture._io_names import io_names
    from tonnx.pipeline.interpret._interpreter import Interpreter
    from tonnx.pipeline.interpret._values import ShapeNamer

    g = GraphBuilder(opsets)
    input_names, output_names = io_names(ep, input_names, output_names)
    interpreter = Interpreter(
        g,
        registry,
        namer=ShapeNamer(dim_names),
        on_missing=lambda missing: dispatcher.on_missing(manager.not_found_error(missing, registry, config)),
        input_names=list(input_names or []),
        output_names=list(output_names or []),
    )
    if record is not None:
        record.attach(ep=ep, registry=registry, config=config, manager=manager, interpreter=interpreter)
    interpreter.run(ep)
    return g, interpreter
