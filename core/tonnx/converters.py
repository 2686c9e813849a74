"""The public authoring surface: everything a converter may import from tonnx.

A converter pack imports from here (and from ``tonnx`` itself: ``Converter``,
``PackSpec``, ``hookimpl``, the errors) and nothing else of tonnx; every other module is
private and may change. ``tests/core/test_public_api.py`` pins this list.
"""

from __future__ import annotations

from tonnx.authoring._converter_helpers import (
    cast,
    is_float,
    named,
    op_accepts,
    operand,
    opmath_type,
    output_used,
    shape_of,
    shape_tensor,
    trunc,
    unused_output,
)
from tonnx._errors import UnsupportedError
from tonnx.authoring._fourier import conjugate, dft
from tonnx.authoring._graph_converter import convert_graph
from tonnx.authoring._math import quadrant_atan, signbit
from tonnx.builder._dtypes import numpy_dtype, onnx_type_from_numpy, onnx_type_from_torch, torch_dtype
from tonnx.builder._rewrites import RewriteContext, RewriteRule
from tonnx.dispatch import Converter

__all__ = [
    "Converter",
    "RewriteContext",
    "RewriteRule",
    "UnsupportedError",
    "cast",
    "conjugate",
    "convert_graph",
    "dft",
    "is_float",
    "named",
    "numpy_dtype",
    "onnx_type_from_numpy",
    "onnx_type_from_torch",
    "op_accepts",
    "operand",
    "opmath_type",
    "output_used",
    "quadrant_atan",
    "shape_of",
    "shape_tensor",
    "signbit",
    "torch_dtype",
    "trunc",
    "unused_output",
]
