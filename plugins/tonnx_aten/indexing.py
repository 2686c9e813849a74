"""Indexing: index, index_put, gather, scatter, embedding, masked ops, topk, sort."""

from __future__ import annotations

CONVERTERS: tuple = ()
