"""Vision and pytorch/examples networks exported with tonnx match torch in onnxruntime.

Each test exports with ``tonnx.testing.check_model`` (max abs diff <= 1e-4 in float32),
checks the graph with ``onnx.checker`` and, since several of these networks have small
outputs, also bounds the difference relative to the output's scale.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from tonnx.testing import check_model, run_onnxruntime

from . import vision_nets as V

ATOL = 1e-4


def _flat(value) -> list[torch.Tensor]:
    leaves = torch.utils._pytree.tree_leaves(value)
    return [t for t in leaves if isinstance(t, torch.Tensor)]


def max_abs_diff(onx, model, inputs: tuple) -> tuple[float, float]:
    """(max abs diff, largest |torch output|) over every output."""
    with torch.no_grad():
        expected = _flat(model(*inputs))
    got = run_onnxruntime(onx, _flat(inputs))
    diff = max(float(np.abs(e.numpy().astype(np.float64) - o).max()) for e, o in zip(expected, got))
    scale = max(float(e.abs().max()) for e in expected if e.is_floating_point())
    return diff, scale


def check(model, args: tuple, *, atol: float = ATOL, rtol: float = 1e-4, **kwargs):
    """check_model + onnx.checker + a bound relative to the output scale; returns the proto."""
    onx = check_model(model, args, atol=atol, rtol=rtol, **kwargs)
    onnx.checker.check_model(onx)
    diff, scale = max_abs_diff(onx, model, args)
    print(f"\n[{type(model).__name__}] max abs diff {diff:.3g} (output scale {scale:.3g})")
    assert diff <= atol * min(1.0, max(scale, 1e-2)), (diff, scale)
    return onx


def _image(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_alexnet():
    # 224x224 keeps torchvision's 6x6 map before AdaptiveAvgPool2d((6, 6))
    check(V.alexnet(), (_image(1, 3, 224, 224),))


@pytest.mark.parametrize("batch_norm", [False, True], ids=["vgg11", "vgg11_bn"])
def test_vgg11(batch_norm):
    check(V.vgg11(batch_norm), (_image(1, 3, 224, 224),))


def test_resnet18():
    check(V.resnet18(), (_image(2, 3, 64, 64),))


def test_resnet50_bottleneck():
    check(V.resnet50(), (_image(2, 3, 64, 64),))


def test_densenet121():
    check(V.densenet121(), (_image(2, 3, 64, 64),))


def test_inception_v3():
    onx = check(V.inception_v3(), (_image(2, 3, 75, 75),))
    # eval mode: only the logits; the unused aux classifier's weights are dropped
    assert len(onx.graph.output) == 1
    assert not [i.name for i in onx.graph.initializer if "AuxLogits" in i.name]


def test_dcgan_generator():
    model = V.dcgan_generator()
    onx = check(model, (_image(2, 100, 1, 1),))
    assert {n.op_type for n in onx.graph.node} >= {"ConvTranspose", "Tanh"}


def test_super_resolution():
    onx = check(V.super_resolution(), (_image(1, 1, 32, 32),))
    shape = [d.dim_value for d in onx.graph.output[0].type.tensor_type.shape.dim]
    assert shape == [1, 1, 96, 96]


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU", "RNN_TANH"])
def test_word_language_model(rnn_type):
    model = V.word_language_model(rnn_type)
    seq, batch = 7, 3
    tokens = torch.randint(0, model.ntoken, (seq, batch), generator=torch.Generator().manual_seed(0))
    hidden = model.init_hidden(batch)
    if isinstance(hidden, tuple):  # non-zero initial state
        hidden = tuple(_image(*h.shape, seed=i + 1) * 0.5 for i, h in enumerate(hidden))
    else:
        hidden = _image(*hidden.shape, seed=1) * 0.5
    onx = check(model, (tokens, hidden))
    # log-probabilities then the new hidden state(s)
    assert len(onx.graph.output) == (3 if rnn_type == "LSTM" else 2)


def test_word_language_model_tied_weights():
    model = V.word_language_model("LSTM", tie_weights=True)
    tokens = torch.randint(0, model.ntoken, (5, 2), generator=torch.Generator().manual_seed(1))
    check(model, (tokens, model.init_hidden(2)))
