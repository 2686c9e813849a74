"""The GraphBuilder every converter writes into."""

from ._file_writer import write_model
from ._graph_builder import SUPPORTED_OPSETS, GraphBuilder
from ._serialize import ExternalDataWriter

__all__ = ["GraphBuilder", "SUPPORTED_OPSETS", "ExternalDataWriter", "write_model"]
