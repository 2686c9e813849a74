"""Normalization layers and dropout."""

from __future__ import annotations

CONVERTERS: tuple = ()
