"""Precision of the folder's weights: the step between the export and the published folder.

``fp32`` is the exported graph as it is. The others (``fp16``, ``bf16``, ``int8``, ``int4``:
weight-only ``com.microsoft.MatMulNBits`` for the linear layers, issue 18 part 2) are a
rewrite of the written model, run here on the staging folder before the greedy check, which
then compares the rewritten model with transformers' fp32 logits at that precision's
tolerance. Until one is written, asking for it is an error, never an fp32 folder labelled
otherwise.
"""

from __future__ import annotations

from tonnx import UnsupportedError

#: precision -> (the step rewriting the staged model.onnx, or None; greedy check atol)
PRECISIONS: dict[str, tuple] = {"fp32": (None, 1e-4)}
PLANNED = ("fp16", "bf16", "int8", "int4")


def check_precision(precision: str) -> None:
    if precision in PRECISIONS:
        return
    planned = " (planned, not written yet)" if precision in PLANNED else ""
    raise UnsupportedError(
        f"--precision {precision!r}{planned}: export-llm writes {', '.join(PRECISIONS)} today."
    )


def apply_precision(path: str, precision: str) -> None:
    """Rewrites the model file at ``path`` to ``precision`` (fp32: nothing to do)."""
    step, _ = PRECISIONS[precision]
    if step is not None:
        step(path)


def tolerance(precision: str) -> float:
    return PRECISIONS[precision][1]
