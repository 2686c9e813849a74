"""Llama4's text model (issue 13, part 3): its rotary embedding computes in complex numbers.

``Llama4TextRotaryEmbedding`` makes ``freqs_cis`` with ``torch.polar`` and the attention
rotates queries and keys with ``view_as_complex(x) * freqs_cis`` then ``view_as_real``:
the aten pack's complex converters (``tonnx_aten/complex.py``) carry those values as
real [..., 2] tensors. Exported with dynamic batch and sequence, with the KV cache
(``to_onnx`` applies tonnx's export patches that make ``DynamicCache`` a pytree).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tonnx
from tonnx.testing import run_onnxruntime

transformers = pytest.importorskip("transformers")

ATOL = 1e-4
DYNAMIC = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}


def tiny_llama4():
    config = transformers.Llama4TextConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        intermediate_size_mlp=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_local_experts=4,
        num_experts_per_tok=1,
    )
    torch.manual_seed(0)
    return transformers.Llama4ForCausalLM(config).eval()


def inputs(batch: int, seq: int, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, 128, (batch, seq), generator=gen)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[0, :2] = 0  # a left-padded row
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def torch_outputs(model, feeds: dict) -> list[np.ndarray]:
    """logits, then each layer's key and value (the ONNX model's present.i.key/value)."""
    with torch.no_grad():
        out = model(**feeds)
    cache = getattr(out, "cache", None) or out.past_key_values  # transformers 5.23: past_key_values
    presents = [t for layer in cache.layers for t in (layer.keys, layer.values)]
    return [t.numpy() for t in (out.logits, *presents)]


def test_llama4_rotary_in_complex_numbers_dynamic_shapes():
    model = tiny_llama4()
    onx = tonnx.to_onnx(model, kwargs=inputs(2, 7, seed=0), dynamic_shapes=DYNAMIC)
    ops = {n.op_type for n in onx.graph.node}
    assert not any(n.startswith("Complex") for n in ops)
    converters = {
        p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.converter"
    }
    assert {"aten:tonnx_aten.complex.aten_polar", "aten:tonnx_aten.complex.aten_mul"} <= converters
    assert [d.dim_param for d in onx.graph.output[0].type.tensor_type.shape.dim][:2] == [
        "batch",
        "seq",
    ]
    for batch, seq, seed in ((2, 7, 1), (3, 11, 2)):
        feeds = inputs(batch, seq, seed)
        expected = torch_outputs(model, feeds)
        got = run_onnxruntime(onx, [feeds["input_ids"], feeds["attention_mask"]])
        assert len(got) == len(expected) == 5
        diffs = [float(np.abs(e.astype(np.float64) - o).max()) for e, o in zip(expected, got)]
        print(f"\n[Llama4 batch={batch} seq={seq}] max abs diff {max(diffs):.3g}")
        assert max(diffs) <= ATOL, diffs
