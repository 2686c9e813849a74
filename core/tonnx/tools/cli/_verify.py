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


def verify(path: str, model, args: tuple, kwargs: dict, *, atol: float, rtol: float) -> list[OutputCheck]:
    """One check per output: onnxruntime on the model file, example inputs, against torch."""
    import onnxruntime
    import torch

    with torch.no_grad():
        expected = _flat_tensors(model(*args, **kwargs))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = [_to_numpy(t) for t in _flat_tensors((args, kwargs))]
    got = session.run(None, {i.name: f for i, f in zip(session.get_inputs(), feeds)})
    names = [o.name for o in session.get_outputs()]
    if len(got) != len(expected):
        return [OutputCheck("outputs", (), "", float("inf"), False,
                            f"torch gives {len(expected)} outputs, onnxruntime {len(got)}")]
    return [_compare(n, _to_numpy(e), o, atol, rtol) for n, e, o in zip(names, expected, got)]


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


def _flat_tensors(value) -> list:
    import torch

    return [t for t in torch.utils._pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def _to_numpy(tensor) -> np.ndarray:
    from tonnx.builder._constants import as_numpy

    array = as_numpy(tensor.detach().cpu())
    return array if array.flags.c_contiguous else array.copy(order="C")
