"""Exit codes of the ``tonnx`` command, stable for CI scripts (docs/cli.md)."""

from __future__ import annotations

OK = 0
#: any other failure: a converter raised, an unsupported case, the file could not be written
FAILED = 1
#: bad command line, or the callable could not be loaded or broke the contract
USAGE = 2
#: ops of the graph have no converter in the enabled packs (ConverterNotFoundError)
MISSING_CONVERTERS = 3
#: torch.export could not trace the model (ExportFailedError)
EXPORT_FAILED = 4
#: --verify: onnxruntime's results differ from torch's beyond the tolerance
VERIFY_FAILED = 5
#: interrupted (Ctrl-C, SIGINT): 128 + 2, what a shell reports for a process SIGINT ended
INTERRUPTED = 130


def of_error(error: BaseException) -> int:
    """The exit code for an error an export raised."""
    from tonnx._errors import (
        ConverterNotFoundError,
        DynamicShapesError,
        ExportFailedError,
        PackLoadError,
    )

    if isinstance(error, ConverterNotFoundError):
        return MISSING_CONVERTERS
    if isinstance(error, ExportFailedError):
        return EXPORT_FAILED
    if isinstance(error, (DynamicShapesError, PackLoadError)):
        return USAGE
    return FAILED
