"""Step 2, prepare: the program made ready to interpret, and the converters it will use."""

from __future__ import annotations

from tonnx.pipeline.prepare import _functorch, _mutations


def prepare_program(ep, dispatcher, opsets: dict[str, int]):
    """(program, manager, registry, config): a program whose mutations torch.export left
    unfunctionalized is functionalized, one with torch.vmap regions lowered; the registry of the enabled packs is built for the
    main opset, and each pack's own domains join ``opsets`` (in place)."""
    from tonnx.dispatch._manager import default_manager

    if _mutations.needs_functionalization(ep.graph):
        ep = ep.run_decompositions({})
    if _functorch.has_functorch_ops(ep.graph_module):
        ep = _functorch.lower_functorch(ep)
    manager = default_manager()
    registry = manager.registry(opsets[""], dispatcher)
    config = manager.pack_config(dispatcher)
    for spec in registry.packs.values():
        if spec is not None:
            for domain, version in spec.domains.items():
                opsets.setdefault(domain, version)
    return ep, manager, registry, config
