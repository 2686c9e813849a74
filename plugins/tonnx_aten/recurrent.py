"""RNN, LSTM, GRU."""

from __future__ import annotations

CONVERTERS: tuple = ()
