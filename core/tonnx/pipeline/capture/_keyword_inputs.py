"""Keyword inputs that land in forward's ``**kwargs``, made explicit for the export.

torch.export (2.13) cannot take ``dynamic_shapes`` for such inputs: it checks the spec
against forward's parameters (``{"kwargs": {...}}``) and later against the call's keywords,
so both forms fail (``AssertionError: Must provide a tree_name when there might be a
mismatch``). A decoder whose library renamed ``past_key_values`` to ``cache`` and takes the
old name through ``**kwargs`` hits it whenever it is called the old way.

For the duration of the export, the module's ``forward`` is an instance attribute with the
same parameters, ``**kwargs`` replaced by one keyword-only parameter per such input; it
calls the original ``forward`` unchanged. The class and eager calls are not touched.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator

_MISSING = object()


def _explicit_signature(forward, kwargs: dict) -> inspect.Signature | None:
    """forward's signature with the keywords ``**kwargs`` would collect as parameters."""
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    var_keyword = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    extra = [k for k in kwargs if k not in signature.parameters]
    if not var_keyword or not extra:
        return None
    kept = [p for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    added = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY) for k in extra]
    return signature.replace(parameters=kept + added)


@contextlib.contextmanager
def explicit_keyword_inputs(model, kwargs: dict | None) -> Iterator[None]:
    """Within the block, ``model.forward`` names every keyword input of ``kwargs``."""
    import torch

    forward = getattr(model, "forward", None)
    signature = (
        _explicit_signature(forward, kwargs or {})
        if isinstance(model, torch.nn.Module)
        else None
    )
    if signature is None:
        yield
        return

    def explicit_forward(*args, **kw):
        return forward(*args, **kw)

    explicit_forward.__signature__ = signature
    saved = model.__dict__.get("forward", _MISSING)
    model.forward = explicit_forward
    try:
        yield
    finally:
        if saved is _MISSING:
            del model.forward
        else:
            model.forward = saved
