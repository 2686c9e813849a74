"""scaled_dot_product_attention."""

from __future__ import annotations

CONVERTERS: tuple = ()
