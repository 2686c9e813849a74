"""Tiny random-weight ``transformers`` models exported with tonnx match torch in onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from torch.export import Dim

from tonnx.testing import check_model, run_onnxruntime

from . import transformer_models as T

pytest.importorskip("transformers")

ATOL = 1e-4


def max_abs_diff(onx, model, inputs: tuple) -> float:
    with torch.no_grad():
        expected = model(*inputs)
    got = run_onnxruntime(onx, list(inputs))
    return float(np.abs(expected.numpy().astype(np.float64) - got[0]).max())


def check(model, args: tuple, *, atol: float = ATOL, rtol: float = 1e-4, other_inputs=(), **kwargs):
    """check_model + onnx.checker; prints the measured max abs diff; returns the proto."""
    onx = check_model(model, args, atol=atol, rtol=rtol, other_inputs=other_inputs, **kwargs)
    onnx.checker.check_model(onx)
    diffs = [max_abs_diff(onx, model, inputs) for inputs in (args, *other_inputs)]
    print(f"\n[{type(model.model).__name__}] max abs diff {max(diffs):.3g}")
    assert max(diffs) <= atol
    return onx


@pytest.mark.parametrize("name", ["llama", "mistral", "qwen2", "gpt2", "bert", "t5", "vit", "whisper"])
def test_static(name):
    model, args = T.MODELS[name]()
    onx = check(model, args)
    assert len(onx.graph.output) == 1


def _symbolic_dims(value_info) -> list[str]:
    return [d.dim_param for d in value_info.type.tensor_type.shape.dim]


@pytest.mark.parametrize("name", ["llama", "bert"])
def test_dynamic_batch_and_sequence(name):
    model, args = T.MODELS[name](batch=2, seq=12)
    _, other = T.MODELS[name](seed=1, batch=3, seq=7)
    batch, seq = Dim("batch", min=1, max=64), Dim("seq", min=2, max=128)
    dynamic_shapes = ({0: batch, 1: seq}, {0: batch, 1: seq})
    onx = check(model, args, dynamic_shapes=dynamic_shapes, other_inputs=[other])
    # the Dims' names name the ONNX dimensions, shared by both inputs and the output
    for value in [*onx.graph.input, onx.graph.output[0]]:
        assert _symbolic_dims(value)[:2] == ["batch", "seq"], (value.name, _symbolic_dims(value))
