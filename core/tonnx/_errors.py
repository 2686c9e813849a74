"""Typed errors raised by tonnx; each message names what failed and how to fix it."""

from __future__ import annotations

__all__ = [
    "TonnxError",
    "ConverterNotFoundError",
    "ConverterConflictError",
    "ConverterOutputError",
    "ConversionError",
    "UnsupportedError",
    "PackLoadError",
    "DynamicShapesError",
    "ExportFailedError",
    "OutputFileError",
]


class TonnxError(Exception):
    """Base class of every error tonnx raises on purpose."""


class ConverterNotFoundError(TonnxError):
    """One or more ops of the graph have no converter in any enabled pack."""

    def __init__(self, message: str, missing: dict[str, int]):
        super().__init__(message)
        #: op key -> number of FX nodes using it
        self.missing = missing


class ConverterConflictError(TonnxError):
    """Two converters apply to the same op with the same priority and specificity."""


class ConverterOutputError(TonnxError):
    """A converter returned a different number of results than the op has outputs."""


class ConversionError(TonnxError):
    """A converter failed while converting one FX node (the cause is chained)."""


class UnsupportedError(TonnxError):
    """A converter met a case it cannot convert exactly (never approximated)."""


class PackLoadError(TonnxError):
    """A converter pack could not be imported or is malformed."""


class PackConfigError(PackLoadError):
    """A ``TONNX_*`` variable or a ``packs=`` item cannot be parsed (exit code 2)."""


class DynamicShapesError(TonnxError):
    """``dynamic_shapes`` does not match the structure of the inputs."""


class ExportFailedError(TonnxError):
    """torch.export could not trace the model; the cause is torch.export's own error."""


class OutputFileError(TonnxError):
    """The model could not be written to the requested file."""
