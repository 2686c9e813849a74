"""The pack's converter table: every family module's CONVERTERS, gathered on load."""

from __future__ import annotations

import importlib

#: One module per op family; each defines CONVERTERS, a tuple of tonnx.Converter.
FAMILIES = (
    "elementwise",
    "unary",
    "reductions",
    "shape",
    "indexing",
    "creation",
    "linalg",
    "conv_pool",
    "resize",
    "normalization",
    "attention",
    "recurrent",
    "shifts",
    "counting",
    "order",
    "losses",
    "random",
    "fft",
    "complex",  # complex=True: only for calls touching complex values
    "decompositions",  # priority 50: only where no direct converter applies
)


def converters() -> list:
    found = []
    for family in FAMILIES:
        module = importlib.import_module(f"{__package__}.{family}")
        found.extend(module.CONVERTERS)
    return found
