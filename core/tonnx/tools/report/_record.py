"""What one export did, phase by phase: timings, the packs used, and why it failed.

``to_onnx(..., report=path)`` fills an :class:`ExportRecord` through a few hooks in
``pipeline/_to_onnx.py`` and writes it as markdown (``_recording`` -> ``_markdown``); the ``tonnx`` command also reads it
to draw its progress bar. Recording costs a clock read per phase, nothing per node.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

#: Phases in the order an export runs them.
PHASES = ("export", "convert", "optimize", "serialize")


class ExportRecord:
    """Filled while an export runs; ``listener(phase)`` is told when a phase starts."""

    def __init__(self, listener: Callable[[str], None] | None = None):
        self.listener = listener
        self.timings: dict[str, float] = {}
        self.current: str | None = None
        self._started = 0.0
        self.ep: Any = None
        self.registry: Any = None
        self.config: Any = None
        self.manager: Any = None
        self.interpreter: Any = None
        self.model: Any = None
        self.error: BaseException | None = None
        self.options: dict[str, Any] = {}

    def start(self, phase: str) -> None:
        """Ends the running phase (if any) and starts ``phase``."""
        self.stop()
        self.current = phase
        self._started = time.perf_counter()
        if self.listener is not None:
            self.listener(phase)

    def stop_all(self) -> None:
        """Ends the running phase, keeping its name when the export failed in it."""
        failed = self.current if self.error is not None else None
        self.stop()
        self._failed_in = failed

    def stop(self) -> None:
        if self.current is not None:
            elapsed = time.perf_counter() - self._started
            self.timings[self.current] = self.timings.get(self.current, 0.0) + elapsed
            self.current = None

    def attach(self, **state: Any) -> None:
        """Stores what convert_program built (program, registry, interpreter, ...)."""
        for name, value in state.items():
            setattr(self, name, value)

    # -- what the report and the progress bar read -------------------------------------------

    def node_progress(self) -> tuple[int, int]:
        """(nodes converted so far, nodes in the graph) while converting, else (0, 0)."""
        interp = self.interpreter
        if interp is None or self.ep is None:
            return 0, 0
        position = interp.g.debug_context.get("position", 0)
        return position, len(self.ep.graph.nodes)

    def failing_node(self):
        """The FX node being converted when the export failed (None if not converting)."""
        if self.error is None or self.interpreter is None or self.failed_phase != "convert":
            return None
        return self.interpreter.g.debug_context.get("fx node")

    @property
    def failed_phase(self) -> str | None:
        if self.error is None:
            return None
        return self.current or getattr(self, "_failed_in", None)

    def ops_by_pack(self) -> dict[str, Counter]:
        """pack -> Counter(op key -> FX nodes it converted), from the interpreter's plan."""
        from tonnx.dispatch._converter import target_key

        result: dict[str, Counter] = {}
        if self.interpreter is None:
            return result
        for node, cand in self.interpreter.plan.items():
            result.setdefault(cand.pack, Counter())[target_key(node.target)] += 1
        return result

    def packs_in_order(self) -> list[tuple[str, str, int, bool]]:
        """Enabled packs as (name, version, priority, fallback), highest priority first."""
        if self.registry is None or self.manager is None:
            return []
        rows = []
        for name, spec in self.registry.packs.items():
            if spec is None:
                continue
            priority = self.config.priority_of(name, spec.priority) if self.config else spec.priority
            rows.append((name, self.manager.versions.get(name, ""), priority, spec.fallback))
        return sorted(rows, key=lambda r: (-r[2], r[0]))
