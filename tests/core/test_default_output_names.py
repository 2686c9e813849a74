"""Output names tonnx derives itself (a dict's or ModelOutput's keys) never clash with an
input's or a weight's: they get ``_output``; a clashing name the user chose is refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tonnx
from tonnx.testing import run_onnxruntime


class MaskOut(torch.nn.Module):
    """Returns a field named as an input (as transformers' parakeet encoder does) and one
    named as a weight."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.full((4,), 2.0))

    def forward(self, x, attention_mask):
        return {"hidden": x * attention_mask * self.scale, "attention_mask": attention_mask[:, :2] > 0,
                "scale": self.scale * 3}


def test_derived_output_names_are_made_unique():
    x, mask = torch.randn(2, 4), torch.ones(2, 4)
    onx = tonnx.to_onnx(MaskOut(), (x, mask), dynamic_shapes=({0: "batch"}, {0: "batch"}))
    assert [i.name for i in onx.graph.input] == ["x", "attention_mask"]
    assert [o.name for o in onx.graph.output] == ["hidden", "attention_mask_output", "scale_output"]
    got = run_onnxruntime(onx, [x.numpy(), mask.numpy()])
    with torch.no_grad():
        want = MaskOut()(x, mask)
    for g, w in zip(got, want.values()):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-6)


def test_a_clashing_output_name_the_user_chose_is_still_refused():
    with pytest.raises(tonnx.TonnxError, match=r"output_names\[1\]='attention_mask' is already the name"):
        tonnx.to_onnx(MaskOut(), (torch.randn(2, 4), torch.ones(2, 4)),
                      output_names=["h", "attention_mask"])


def test_a_made_up_name_skips_names_already_taken():
    from tonnx.pipeline.capture._io_names import unique_defaults

    taken = {"x", "attention_mask", "attention_mask_output"}
    assert unique_defaults(["mine", "attention_mask", "", "x"], 1, taken) == [
        "mine", "attention_mask_output_1", "", "x_output"]
    assert unique_defaults(["attention_mask"], 1, taken) == ["attention_mask"]  # the user's
