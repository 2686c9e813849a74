"""``--verify``: run the exported model in onnxruntime and compare each output with torch."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class OutputCheck:
    name: str
    shape: tuple
    dtype: str
    max_abs_diff: float
    ok: bool
    problem: str = ""

    def line(self) -> str:
        status = "ok" if self.ok else f"FAILED{': ' + self.problem if self.problem else ''}"
        return (f"  {self.name}: {self.dtype}{list(self.shape)} "
                f"max abs diff {self.max_abs_diff:.3g} ({status})")


def verify(path: str, onx, model, args: tuple, kwargs: dict, *, atol: float, rtol: float) -> list[OutputCheck]:
    """One check per output of the model file ``path`` (``onx`` its proto), run in
    onnxruntime on the example inputs, against what ``tonnx.testing.check_model`` compares
    (torch's outputs, then the new value of each buffer or input forward writes to)."""
    import onnxruntime

    from tonnx.tools._expected import expected_outputs, mutation_outputs, to_numpy

    expected, feeds = expected_outputs(model, tuple(args), dict(kwargs), mutation_outputs(onx))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = [to_numpy(t) for t in feeds]
    got = session.run(None, {i.name: f for i, f in zip(session.get_inputs(), feeds)})
    names = [o.name for o in session.get_outputs()]
    if len(got) != len(expected):
        return [OutputCheck("outputs", (), "", float("inf"), False,
                            f"torch gives {len(expected)} outputs, onnxruntime {len(got)}")]
    return [_compare(n, to_numpy(e), o, atol, rtol) for n, e, o in zip(names, expected, got)]


def _compare(name: str, want: np.ndarray, got: np.ndarray, atol: float, rtol: float) -> OutputCheck:
    if want.dtype != got.dtype or want.shape != got.shape:
        return OutputCheck(name, got.shape, str(got.dtype), float("inf"), False,
                           f"torch has {want.dtype}{list(want.shape)}")
    if want.size == 0:
        return OutputCheck(name, got.shape, str(got.dtype), 0.0, True)
    w, g = want.astype(np.float64), got.astype(np.float64)
    both_nan = np.isnan(w) & np.isnan(g)
    diff = np.where(both_nan, 0.0, np.abs(w - g))
    diff = np.where(np.isnan(diff), np.inf, diff)
    ok = bool(np.all(diff <= atol + rtol * np.abs(np.nan_to_num(w))))
    return OutputCheck(name, got.shape, str(got.dtype), float(diff.max()), ok)
