"""What torch eager gives for an exported model, in the order of the ONNX outputs.

One definition for ``tonnx.testing.check_model`` and ``tonnx export --verify``: the
model's outputs, then the new value of each buffer, parameter or input forward writes to
(the ``<name>.updated`` outputs), computed on copies of the inputs with the model's state
put back after the run (the ONNX model always starts from the state it was exported with).
A complex tensor is compared as its real pairs [..., 2], as the ONNX model carries it.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def to_numpy(tensor) -> np.ndarray:
    """A C-contiguous array of ``tensor`` (a complex one as its pairs [..., 2])."""
    from tonnx.builder._constants import as_numpy
    from tonnx.pipeline.interpret._complex import pairs

    array = as_numpy(pairs(tensor))
    # not np.ascontiguousarray: it turns a 0-d array into shape (1,)
    return array if array.flags.c_contiguous else array.copy(order="C")


def flat_tensors(value) -> list:
    import torch

    leaves = torch.utils._pytree.tree_leaves(value)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def mutation_outputs(onx) -> list[tuple[str, Any]]:
    """(kind, what) for each output after the model's own: the new value of a buffer or
    parameter (its state_dict name) or of a user input (its flat position) forward writes."""
    import json

    meta = {p.key: p.value for p in onx.metadata_props}
    signature = json.loads(meta.get("pkg.tonnx.graph_signature", '{"inputs": [], "outputs": []}'))
    user_inputs = [i["fx"] for i in signature["inputs"] if i["kind"] == "USER_INPUT"]
    found = []
    for entry in signature["outputs"]:
        kind = entry["kind"]
        if kind == "USER_INPUT_MUTATION":
            found.append((kind, user_inputs.index(entry["target"])))
        elif kind != "USER_OUTPUT":
            found.append((kind, entry["target"]))
    return found


def expected_outputs(model, inputs, kwargs: dict, mutations) -> tuple[list, list]:
    """(torch's outputs then the mutated values, the onnx feeds) for one input set."""
    import torch

    if not mutations:
        with torch.no_grad():
            expected = flat_tensors(model(*inputs, **kwargs))
        return expected, flat_tensors((tuple(inputs), kwargs))
    inputs, kwargs = torch.utils._pytree.tree_map_only(torch.Tensor, torch.clone, (tuple(inputs), kwargs))
    feeds = [t.clone() for t in flat_tensors((inputs, kwargs))]
    tensors = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    state = {what: tensors[what] for kind, what in mutations if kind != "USER_INPUT_MUTATION"}
    saved = {what: t.detach().clone() for what, t in state.items()}
    try:
        with torch.no_grad():
            expected = flat_tensors(model(*inputs, **kwargs))
            flat = flat_tensors((inputs, kwargs))
            for kind, what in mutations:
                expected.append((flat[what] if kind == "USER_INPUT_MUTATION" else state[what]).detach().clone())
    finally:
        with torch.no_grad():
            for what, t in state.items():
                t.copy_(saved[what])
    return expected, feeds
