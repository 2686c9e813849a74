"""Step 5, write: the model proto and its weights to files."""

from tonnx.pipeline.write._file_writer import write_model
from tonnx.pipeline.write._sinks import ExternalDataWriter

__all__ = ["ExternalDataWriter", "write_model"]
