"""Step 2, prepare: the program made ready to interpret, and the converters it will use."""

from __future__ import annotations

from tonnx.pipeline.prepare import _mutations


def prepare_program(ep, dispatcher, opsets: dict[str, int]):
    """(program, manager, registry, config): a program whose mutations torch.export left
    unfunctionalized is functionalized; the registry of the enabled packs is built for the
    main opset, and each pack's own domains join ``opsets`` (in place)."""
    from tonnx.dispatch._manager import default_manager

    if _mutations.needs_functionalization(ep.graph):
        ep = ep.run_decompositions({})
    manager = default_manager()
    registry = manager.registry(opsets[""], dispatcher)
    config = manager.pack_config(dispatcher)
    for spec in registry.packs.values():
        if spec is not None:
            for domain, version in spec.domains.items():
                opsets.setdefault(domain, version)
    return ep, manager, registry, config
