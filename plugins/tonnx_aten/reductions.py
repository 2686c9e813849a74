"""Reductions, softmax, cumulative ops."""

from __future__ import annotations

CONVERTERS: tuple = ()
