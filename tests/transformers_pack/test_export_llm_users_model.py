"""``export_llm(model_object, ...)``: the caller's model comes back as it was given.

The int8/int4 greedy check compares the folder against transformers holding the folder's
quantized weights; that reference is built by replacing each linear layer's weight. For a
model given as an object it must be a copy: the user's weights are the user's (found while
adding Whisper: the text path quantized the caller's model in place)."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")

import llm_folders  # noqa: E402

from tonnx_transformers.llm import export_llm  # noqa: E402


@pytest.mark.parametrize("precision", ["int4", "fp16"])
def test_the_callers_model_is_not_changed(tmp_path, precision):
    model = llm_folders.model("llama")
    model.train()
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    export_llm(model, tmp_path / "out", precision=precision, tokenizer=False)
    after = model.state_dict()
    changed = [name for name, tensor in before.items()
               if after[name].dtype != tensor.dtype or not torch.equal(after[name], tensor)]
    assert not changed, f"export_llm changed the caller's tensors: {changed}"
    assert model.training, "export_llm left the caller's model in eval mode"
