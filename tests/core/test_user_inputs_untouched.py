"""The caller's tensors after ``to_onnx``: exactly as before, whether the export failed or
succeeded (torch.export marks the tensors it traces, and a marked tensor changes the next
export of it)."""

from __future__ import annotations

import pytest
import torch

import tonnx


def _attributes(*tensors) -> list[dict]:
    return [dict(vars(t)) for t in tensors]


def test_a_failed_export_leaves_the_example_as_it_was():
    model, x = torch.nn.Linear(3, 2), torch.randn(2, 3)
    with pytest.raises(tonnx.TonnxError):  # the model fixes axis 1 to 3
        tonnx.to_onnx(model, (x,), dynamic_shapes=({1: "f"},))
    assert vars(x) == {}
    torch.export.export(model, (x,))  # failed with "Constraints violated" when x kept the marks
    tonnx.to_onnx(model, (x,))


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)
        self.register_buffer("offset", torch.zeros(2))

    def forward(self, x, *, extra, pairs):
        return self.linear(x) + self.offset + extra["a"] + pairs[0].sum()


def test_a_successful_export_leaves_nested_inputs_and_state_as_they_were():
    model = Nested()
    x, a, p = torch.randn(4, 3), torch.randn(4, 2), torch.randn(5)
    torch._dynamo.mark_dynamic(p, 0)  # the user's own marks stay as the user set them
    x.note = "mine"
    before = _attributes(x, a, p, model.linear.weight, model.offset)
    tonnx.to_onnx(model, (x,), {"extra": {"a": a}, "pairs": [p]},
                  dynamic_shapes={"x": {0: "batch"}, "extra": {"a": {0: "batch"}}, "pairs": [None]})
    assert _attributes(x, a, p, model.linear.weight, model.offset) == before
    assert "_specialize_on" not in vars(x)
    assert vars(p)["_dynamo_dynamic_indices"] == {0}
