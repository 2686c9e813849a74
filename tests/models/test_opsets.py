"""Every supported opset (18..26) gives a valid model that matches torch."""

from __future__ import annotations

import onnx
import pytest
import torch

from tonnx.testing import check_model

from . import transformer_models as T
from . import vision_nets as V


@pytest.mark.parametrize("opset", range(18, 27))
@pytest.mark.parametrize("name", ["llama", "bert", "resnet18", "word_language_model"])
def test_model_at_every_opset(name, opset):
    if name == "resnet18":
        model, args = V.resnet18(), (torch.randn(2, 3, 32, 32),)
    elif name == "word_language_model":
        model = V.word_language_model("LSTM")
        args = (torch.randint(0, model.ntoken, (5, 2)), model.init_hidden(2))
    else:
        model, args = T.MODELS[name]()
    onx = check_model(model, args, target_opset=opset, atol=1e-4, rtol=1e-4)
    onnx.checker.check_model(onx)
    assert {o.domain: o.version for o in onx.opset_import}[""] == opset
