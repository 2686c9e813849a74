"""The caller's tensors as they were before torch.export, whatever it did to them.

torch.export marks the example tensors it traces: ``_dynamo_dynamic_indices`` and the
other ``_dynamo_*`` sets, ``_specialize_on``. It removes some of them when it succeeds and
none when it fails, and a marked tensor changes the next export of it (a dimension once
declared dynamic fails a later static export with "Constraints violated"). The tensors are
the user's: every attribute added is removed and every one changed is put back, after a
success and after a failure, for the inputs (nested ones included) and the module's
parameters, buffers and tensor attributes.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator


def _tensors(model, args: tuple, kwargs: dict) -> list:
    """Every distinct tensor the export can mark: inputs (pytree leaves), then the model's."""
    import torch

    found = [t for t in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        found.extend(model.parameters())
        found.extend(model.buffers())
        for module in model.modules():
            found.extend(v for v in vars(module).values() if isinstance(v, torch.Tensor))
    return list({id(t): t for t in found}.values())


def _snapshot(tensor) -> dict:
    """name -> (the object, a copy of its content when it is a mutable container)."""
    return {
        name: (value, copy.copy(value) if isinstance(value, (set, dict, list)) else None)
        for name, value in vars(tensor).items()
    }


def _restore(tensor, saved: dict) -> None:
    for name in [n for n in vars(tensor) if n not in saved]:
        delattr(tensor, name)
    for name, (value, content) in saved.items():
        if isinstance(value, list):  # torch adds to an existing container in place
            value[:] = content
        elif content is not None:
            value.clear()
            value.update(content)
        setattr(tensor, name, value)


@contextlib.contextmanager
def kept_inputs(model, args: tuple, kwargs: dict) -> Iterator[None]:
    """Within the block torch.export may mark the tensors; after it, they are as before."""
    saved = [(t, _snapshot(t)) for t in _tensors(model, args, kwargs)]
    try:
        yield
    finally:
        for tensor, attributes in saved:
            _restore(tensor, attributes)
