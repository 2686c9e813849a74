"""The GraphBuilder every converter writes into, and its graph passes."""

from tonnx.builder._graph_builder import SUPPORTED_OPSETS, GraphBuilder

__all__ = ["GraphBuilder", "SUPPORTED_OPSETS"]
