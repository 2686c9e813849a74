"""The GraphBuilder every converter writes into."""

from ._graph_builder import SUPPORTED_OPSETS, GraphBuilder
from ._serialize import ExternalDataWriter, write_model

__all__ = ["GraphBuilder", "SUPPORTED_OPSETS", "ExternalDataWriter", "write_model"]
