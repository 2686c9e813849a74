"""Shape and view ops: view, reshape, permute, expand, cat, split, slice, pad, copies."""

from __future__ import annotations

CONVERTERS: tuple = ()
