"""``to_onnx`` called from several threads at once: each gets its own model, right.

torch.export's tracing state is process-wide; before the export lock, two threads failed
most of the time inside torch ("torch.export's failure, not tonnx's")."""

from __future__ import annotations

import threading

import numpy as np
import torch

import tonnx
from tonnx.testing import run_onnxruntime


def _models():
    torch.manual_seed(0)
    return [
        (torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()).eval(), (torch.randn(3, 4),), {0: "batch"}),
        (torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Sigmoid()).eval(), (torch.randn(2, 3, 8, 8),), {0: "n"}),
        (torch.nn.LayerNorm(5).eval(), (torch.randn(2, 6, 5),), {1: "seq"}),
        (torch.nn.Sequential(torch.nn.Linear(5, 2), torch.nn.Tanh()).eval(), (torch.randn(7, 5),), {0: "rows"}),
    ]


def test_threads_export_different_models_at_once():
    cases = _models()
    results: dict[int, object] = {}
    start = threading.Barrier(len(cases))

    def export(i, model, args, dims):
        start.wait()
        try:
            results[i] = tonnx.to_onnx(model, args, dynamic_shapes=(dims,))
        except Exception as e:  # noqa: BLE001 - reported below, per thread
            results[i] = e

    threads = [threading.Thread(target=export, args=(i, *case)) for i, case in enumerate(cases)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    failures = {i: r for i, r in results.items() if isinstance(r, Exception)}
    assert not failures, failures
    for i, (model, args, _) in enumerate(cases):
        (got,) = run_onnxruntime(results[i], [a.numpy() for a in args])
        with torch.no_grad():
            np.testing.assert_allclose(got, model(*args).numpy(), rtol=1e-5, atol=1e-5)
