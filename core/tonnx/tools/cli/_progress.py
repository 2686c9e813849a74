"""A one-line progress bar on stderr while an export runs, only on a terminal.

A daemon thread redraws it a few times a second from the export record (the phase, and
during conversion the interpreter's position in the graph): the export itself pays nothing.
"""

from __future__ import annotations

import sys
import threading
import time

WIDTH = 30
PERIOD = 0.1


class Progress:
    """``with Progress(record, enabled=...)``: draws while the block runs, then clears."""

    def __init__(self, record, *, enabled: bool | None = None, stream=None):
        self.record = record
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._begin = 0.0

    def __enter__(self) -> Progress:
        if self.enabled:
            self._begin = time.perf_counter()
            self._thread = threading.Thread(target=self._run, name="tonnx-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.stream.write("\r" + " " * (WIDTH + 60) + "\r")
            self.stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(PERIOD):
            self.stream.write("\r" + self.line())
            self.stream.flush()

    def line(self) -> str:
        """The bar's text for the record's current state."""
        phase = self.record.current or "starting"
        done, total = self.record.node_progress() if phase == "convert" else (0, 0)
        elapsed = time.perf_counter() - self._begin
        if total:
            filled = int(WIDTH * min(done, total) / total)
            bar = "#" * filled + "." * (WIDTH - filled)
            return f"tonnx [{bar}] {phase} node {done}/{total} {elapsed:6.1f}s"
        return f"tonnx [{'.' * WIDTH}] {phase:<10} {elapsed:6.1f}s"
