"""Unary math and activation functions."""

from __future__ import annotations

CONVERTERS: tuple = ()
