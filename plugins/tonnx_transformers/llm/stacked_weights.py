"""Model tensors transformers builds from several checkpoint tensors, built as they are written.

transformers 5 loads a mixture-of-experts checkpoint (one matrix an expert: Mixtral's
``w1``/``w3``/``w2``, Qwen3-MoE's and OLMoE's ``gate_proj``/``up_proj``/``down_proj``) into
stacked parameters (``experts.gate_up_proj`` ``[E, 2I, H]``, ``experts.down_proj``) with the
weight converters of its ``conversion_mapping``. To stream such a folder, each stacked tensor
becomes a :class:`~tonnx.toolkit.Derivation`: its sources are its checkpoint tensors,
in the order transformers collects them, and its computation runs a copy of transformers' own
converter on them. The writer computes it when it writes the tensor (or a tensor derived from
it, such as onnxruntime's interleaved ``fc1``), so one layer's experts are in memory at a time.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from tonnx.toolkit import Derivation


def stacked_tensors(model: Any, shapes: dict[str, tuple[int, ...]]) -> dict[str, Derivation]:
    """For each tensor of ``model`` (built on ``meta``) that a weight converter of
    transformers makes from checkpoint tensors (``shapes``: the checkpoint's names and
    shapes), how to compute it from them. Empty when the model has no such tensor."""
    import torch
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import (
        WeightConverter,
        WeightRenaming,
        dot_natural_key,
        rename_source_key,
    )

    mapping = get_model_conversion_mapping(model)
    converters = [m for m in mapping if isinstance(m, WeightConverter)]
    if not converters:
        return {}
    renamings = [m for m in mapping if isinstance(m, WeightRenaming)]
    by_pattern = {pattern: c for c in converters for pattern in c.source_patterns}
    state = model.state_dict()
    # target -> (converter, [(source pattern, checkpoint key)] in transformers' order)
    collected: dict[str, tuple[Any, list[tuple[str, str]]]] = {}
    for key in sorted(shapes, key=dot_natural_key):
        target, pattern = rename_source_key(key, renamings, converters, model.base_model_prefix, state)
        if pattern is not None and target in state:
            collected.setdefault(target, (by_pattern[pattern], []))[1].append((pattern, key))
    stacked = {}
    for target, (converter, parts) in collected.items():
        dtype = state[target].dtype
        sources = tuple((key, torch.empty(shapes[key], dtype=dtype, device="meta")) for _, key in parts)
        stacked[target] = Derivation(sources, _Stack(converter, target, [p for p, _ in parts], model.config))
    return stacked


class _Stack:
    """``compute`` of a stacked tensor: transformers' converter over its checkpoint tensors."""

    def __init__(self, converter: Any, target: str, patterns: list[str], config: Any):
        self.converter, self.target, self.patterns, self.config = converter, target, patterns, config

    def __call__(self, *values: np.ndarray) -> np.ndarray:
        import torch

        converter = copy.deepcopy(self.converter)  # it collects tensors: one copy a call
        for pattern, value in zip(self.patterns, values):
            converter.add_tensor(self.target, "", pattern, torch.from_numpy(np.ascontiguousarray(value)))
        result = converter.convert(self.target, config=self.config)[self.target]
        return result.contiguous().numpy()
