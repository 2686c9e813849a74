"""AFMoE (small config, random weights) through tonnx and onnxruntime.

``AfmoeForCausalLM.from_config`` zero-initializes every router (``router.gate`` and
``expert_bias``), so all sigmoid scores are exactly 0.5 and the top-k choice of experts is a
tie among all of them. torch's CPU ``topk`` then returns the experts its selection
algorithm happens to leave in front ([2, 3] of 4 experts for top-2), ONNX's ``TopK`` the
lowest indices ([0, 1]): both valid top-k sets, different experts, logits 0.27 apart. No
converter is wrong: with a router that ranks the experts (any trained one) tonnx is exact,
and with the tied router it computes exactly what eager computes when ties go to the
lowest index.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tonnx
from tonnx.testing import run_onnxruntime

from .transformer_models import CausalLMLogits, _decoder_kwargs, _ids, _mask, _seeded

transformers = pytest.importorskip("transformers")

PACKS = pytest.mark.parametrize("packs", [None, ["no:ortcontrib"]], ids=["default", "no-ortcontrib"])


def afmoe(seed: int = 0, batch: int = 2, seq: int = 12):
    config = transformers.AfmoeConfig(
        **_decoder_kwargs(),
        head_dim=16,
        num_experts=4,
        num_experts_per_tok=2,
        num_shared_experts=1,
        moe_intermediate_size=32,
        num_dense_layers=1,
        layer_types=["sliding_attention", "full_attention"],
        sliding_window=8,
    )
    gen = _seeded(seed)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    args = (_ids(gen, config.vocab_size, batch, seq), _mask(batch, seq))
    return CausalLMLogits(model).eval(), args


def _routers(model):
    return [m for m in model.modules() if type(m).__name__ == "AfmoeSparseMoeBlock"]


def _max_diff(onx, expected: torch.Tensor, args) -> float:
    return float(np.abs(expected.numpy() - run_onnxruntime(onx, list(args))[0]).max())


def _lowest_index_topk(input, k, dim=-1, largest=True, sorted=True):
    """torch.topk with ties broken to the lowest index (ONNX TopK's documented rule)."""
    order = torch.sort(input, dim=dim, descending=largest, stable=True).indices.narrow(dim, 0, k)
    return torch.return_types.topk((input.gather(dim, order), order))


@PACKS
def test_afmoe_with_a_ranking_router_matches_torch(packs):
    model, args = afmoe()
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for block in _routers(model):
            block.router.gate.weight.normal_(0, 0.1, generator=gen)
            block.expert_bias.normal_(0, 0.01, generator=gen)
        expected = model(*args)
    dispatcher = tonnx.Dispatcher(packs=packs) if packs else None
    diff = _max_diff(tonnx.to_onnx(model, args, dispatcher=dispatcher), expected, args)
    print(f"\n[Afmoe, drawn router] max abs diff {diff:.3g}")
    assert diff <= 1e-4


@PACKS
def test_afmoe_from_config_ties_every_expert_and_onnx_takes_the_lowest(packs, monkeypatch):
    model, args = afmoe()
    with torch.no_grad():
        hidden = torch.randn(24, 64)
        for block in _routers(model):
            scores = torch.sigmoid(block.router.gate(hidden)) + block.expert_bias
            assert bool((scores == scores[0, 0]).all()), "the router no longer ties: revisit"
    dispatcher = tonnx.Dispatcher(packs=packs) if packs else None
    onx = tonnx.to_onnx(model, args, dispatcher=dispatcher)
    monkeypatch.setattr(torch, "topk", _lowest_index_topk)
    with torch.no_grad():
        expected = model(*args)
    diff = _max_diff(onx, expected, args)
    print(f"\n[Afmoe, tied router, ties to the lowest index] max abs diff {diff:.3g}")
    assert diff <= 1e-4
