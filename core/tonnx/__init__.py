"""tonnx: a fast PyTorch to ONNX exporter built on torch.export, with converters in packs.

Importing tonnx does not import torch; :func:`to_onnx` does when first called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

from ._errors import (  # noqa: E402
    ConversionError,
    ConverterConflictError,
    ConverterNotFoundError,
    ConverterOutputError,
    DynamicShapesError,
    ExportFailedError,
    OutputFileError,
    PackLoadError,
    TonnxError,
    UnsupportedError,
)
from ._export import to_onnx  # noqa: E402
from ._pretty import pretty  # noqa: E402
from ._program import convert, export_patches, export_program  # noqa: E402
from .dispatch import Converter, Dispatcher, PackSpec, hookimpl  # noqa: E402

if TYPE_CHECKING:
    from .builder import GraphBuilder

__all__ = [
    "__version__",
    "to_onnx",
    "export_patches",
    "pretty",
    "export_program",
    "convert",
    "GraphBuilder",
    "Converter",
    "Dispatcher",
    "PackSpec",
    "hookimpl",
    "TonnxError",
    "ConversionError",
    "ConverterConflictError",
    "ConverterNotFoundError",
    "ConverterOutputError",
    "DynamicShapesError",
    "ExportFailedError",
    "OutputFileError",
    "PackLoadError",
    "UnsupportedError",
]


def __getattr__(name: str):
    # GraphBuilder imports onnx; keep `import tonnx` light until it is needed.
    if name == "GraphBuilder":
        from .builder import GraphBuilder

        return GraphBuilder
    raise AttributeError(f"module 'tonnx' has no attribute {name!r}")
