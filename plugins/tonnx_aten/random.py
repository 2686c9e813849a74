"""Converters of the random family (filled in by issue 19's work)."""

from __future__ import annotations

CONVERTERS = ()
