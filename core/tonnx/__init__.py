"""tonnx: a fast PyTorch to ONNX exporter built on torch.export, with converters in packs.

Importing tonnx does not import torch; :func:`to_onnx` does when first called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tonnx._version import __version__  # noqa: E402

from tonnx._errors import (  # noqa: E402
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
from tonnx.pipeline import convert, export_patches, export_program, to_onnx  # noqa: E402
from tonnx.tools._pretty import pretty  # noqa: E402
from tonnx.dispatch import Converter, Dispatcher, PackSpec, hookimpl  # noqa: E402

if TYPE_CHECKING:
    from tonnx.builder import GraphBuilder

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
        from tonnx.builder import GraphBuilder

        return GraphBuilder
    raise AttributeError(f"module 'tonnx' has no attribute {name!r}")
