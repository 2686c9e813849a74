"""The GraphBuilder every converter writes into, and its graph passes."""

from tonnx._opsets import SUPPORTED_OPSETS
from tonnx.builder._graph_builder import GraphBuilder

__all__ = ["GraphBuilder", "SUPPORTED_OPSETS"]
