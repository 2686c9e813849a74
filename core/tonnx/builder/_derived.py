"""Initializers computed from other initializers, for weights that are not in memory yet.

A rewrite that changes weights (three projections packed into one, a transposed copy) can
compute the new tensor at once when its sources hold data. A model built on ``meta`` (its
weights streamed from safetensors while the file is written) has nothing to compute from:
the rewrite then adds a ``meta`` placeholder and a :class:`Derivation` saying how to compute
it, and the weights source computes it when the writer asks for its bytes (one derived
tensor and its sources in memory at a time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tonnx.builder import _constants


@dataclass(frozen=True)
class Derivation:
    """``compute(*sources' values as numpy arrays)`` gives the initializer's value."""

    #: (initializer name, its value as the builder held it: a meta tensor or data)
    sources: tuple[tuple[str, Any], ...]
    compute: Callable[..., np.ndarray]


def derive(g, sources: list[str], compute: Callable[..., np.ndarray], shape: tuple[int, ...], dtype,
           name: str = "") -> str:
    """The name of a new initializer ``compute(*values of sources)`` of ``shape`` and torch
    ``dtype`` (named ``name``, or automatically): computed now when every source has data,
    else a ``meta`` placeholder whose :class:`Derivation` is recorded in ``g.derivations``
    for the writer. Either way ``g.derived_from`` records the sources' names."""
    import torch

    values = [_initializer(g, source) for source in sources]
    if all(_constants.has_data(v) for v in values):
        value = compute(*(_constants.as_numpy(v) for v in values))
        name = g.make_initializer(name, value, dedup=False)
    else:
        name = g.make_initializer(name, torch.empty(shape, dtype=dtype, device="meta"), dedup=False)
        g.derivations[name] = Derivation(tuple(zip(sources, values)), compute)
    g.derived_from[name] = tuple(sources)
    return name


def _initializer(g, name: str) -> Any:
    value = g.initializer(name)
    if value is None:
        raise KeyError(f"{name!r} is not an initializer")
    return value
