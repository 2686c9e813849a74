"""Tensor creation: zeros, ones, full, arange, *_like, scalar_tensor, tril/triu."""

from __future__ import annotations

CONVERTERS: tuple = ()
