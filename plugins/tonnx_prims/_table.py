"""The pack's converter table: every family module's CONVERTERS, gathered on load."""

from __future__ import annotations

import importlib

#: One module per op family; each defines CONVERTERS, a tuple of tonnx.Converter.
FAMILIES = (
    "elementwise",
    "reductions",
    "shape",
    "creation",
    "fft",  # complex=True: pair tensors [..., 2]
)


def converters() -> list:
    found = []
    for family in FAMILIES:
        module = importlib.import_module(f"{__package__}.{family}")
        found.extend(module.CONVERTERS)
    return found
