"""Convolutions, pooling and upsampling."""

from __future__ import annotations

CONVERTERS: tuple = ()
