"""The onnxruntime the pack's graph is for: the installed one by default, or the one an
export names (``Dispatcher(target_runtime=...)``); the model records what it needs.

onnxruntime 1.31 refuses GroupQueryAttention's 17th input (``query_seqlens``, 1.32's), which
the cache form needs: a Llama exported with its KV cache must then keep the standard graph
for attention and still match torch. Run against the oldest supported onnxruntime (1.31.1)
and the newest (1.32.0): the tests that name a target hold on both.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from tonnx_ortcontrib import _target

import tonnx
from tests.models import transformer_models as T
from tests.models.test_kv_cache import DYNAMIC, _check_steps, _inputs

MIN_KEY = "pkg.tonnx.min_onnxruntime"
INSTALLED = _target.resolve({})
STEPS = [(0, 3, 4, "left"), (5, 3, 1, "left"), (5, 1, 3, "right"), (5, 3, 2, "right")]


def _metadata(onx) -> dict[str, str]:
    return {p.key: p.value for p in onx.metadata_props}


def _cache_attention(onx) -> list:
    """GroupQueryAttention nodes that read a cache (input 3)."""
    return [n for n in onx.graph.node if n.op_type == "GroupQueryAttention" and len(n.input) > 3 and n.input[3]]


def _export_llama(dispatcher=None):
    model = T.MODELS["llama"]()[0].model
    onx = tonnx.to_onnx(model, kwargs=_inputs(model.config, 2, 3, 5, "left", 0), dynamic_shapes=DYNAMIC,
                        dispatcher=dispatcher)  # fmt: skip
    return model, onx


def test_the_default_target_is_the_installed_onnxruntime():
    assert INSTALLED.version == _target.parse(ort.__version__, "test")
    assert INSTALLED.source == "installed"


def test_llama_with_its_cache_opens_and_matches_torch_on_the_installed_onnxruntime():
    """1.31: attention with the cache keeps the standard graph; 1.32: GroupQueryAttention with
    query_seqlens. Either way the session opens and the steps match torch."""
    model, onx = _export_llama()
    fused = _cache_attention(onx)
    assert bool(fused) == INSTALLED.gqa_with_cache
    assert all(len(n.input) == 17 for n in fused)
    want = "1.32.0" if INSTALLED.gqa_with_cache else "1.31.1"
    assert _metadata(onx)[MIN_KEY] == want  # RotaryEmbedding nodes remain on 1.31
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    _check_steps(model, session, STEPS)


def test_a_named_target_gives_its_form_which_runs_on_the_installed_onnxruntime():
    """Export for 1.31.1 (wherever it runs): no 1.32-only input, and the graph is exact on
    the installed onnxruntime too (1.32 runs 1.31's forms)."""
    model, onx = _export_llama(tonnx.Dispatcher(target_runtime={"onnxruntime": "1.31.1"}))
    assert not _cache_attention(onx)
    assert all(len(n.input) <= 16 for n in onx.graph.node if n.op_type == "GroupQueryAttention")
    assert _metadata(onx)[MIN_KEY] == "1.31.1"
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    _check_steps(model, session, STEPS)


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("qwen3_moe", {"norm_topk_prob": False}), ("olmoe", {"norm_topk_prob": False}), ("qwen2_moe", {}),
        ("deepseek_v3", {}), ("deepseek_v2", {}),
    ],  # fmt: skip
)
def test_moe_models_for_the_oldest_target_match_torch_on_the_installed_onnxruntime(name, overrides):
    """The blocks whose routing weights are not renormalized: exported for 1.31.1, MoE
    renormalizes and the sum multiplies back (1.31.1's unnormalized MoE may return zeros);
    run on the installed onnxruntime (1.31.1 or 1.32.0), equal to torch."""
    from test_ortcontrib_moe import _export_and_check, _model, _moe_nodes

    model = _model(name, **overrides)
    onx, _, _ = _export_and_check(model, tonnx.Dispatcher(target_runtime={"onnxruntime": "1.31.1"}))
    nodes = _moe_nodes(onx)
    assert nodes and all({a.name: a.i for a in n.attribute}["normalize_routing_weights"] == 1 for n in nodes)
    assert _metadata(onx)[MIN_KEY] == "1.31.1"


class MaskedLogits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


@pytest.mark.parametrize("name", ["qwen3_moe", "deepseek_v3"])
def test_moe_models_with_static_shapes_match_torch_on_the_installed_onnxruntime(name):
    """Issue 31: torch 2.13 exports these blocks (unnormalized weights) with static shapes so
    that onnxruntime runs MoE in place over its tokens, where 1.31.1's MoE returned zeros
    (0.028 and 0.084 from torch in the logits). The installed onnxruntime's form is exact."""
    from test_ortcontrib_moe import _model, _moe_nodes

    wrapped = MaskedLogits(_model(name))
    ids = torch.randint(3, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    inputs = (ids, torch.ones(2, 16, dtype=torch.int64))
    onx = tonnx.to_onnx(wrapped, inputs)
    assert _moe_nodes(onx)
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        want = wrapped(*inputs).numpy()
    got = session.run(None, {"input_ids": inputs[0].numpy(), "attention_mask": inputs[1].numpy()})[0]
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def test_a_named_newer_target_records_what_it_needs():
    """Export for 1.32.0 from any environment: the cache form, and the model says it needs 1.32."""
    _, onx = _export_llama(tonnx.Dispatcher(target_runtime={"onnxruntime": "1.32.0"}))
    assert _cache_attention(onx) and all(len(n.input) == 17 for n in _cache_attention(onx))
    assert _metadata(onx)[MIN_KEY] == "1.32.0"


def test_a_model_without_com_microsoft_nodes_records_no_onnxruntime():
    _, onx = _export_llama(tonnx.Dispatcher(packs=["no:ortcontrib"]))
    assert not [n for n in onx.graph.node if n.domain == "com.microsoft"]
    assert MIN_KEY not in _metadata(onx)


def test_a_target_older_than_supported_is_refused_with_the_way_out():
    with pytest.raises(tonnx.PackLoadError, match=r"1\.31\.1 or later.*no:ortcontrib"):
        _export_llama(tonnx.Dispatcher(target_runtime={"onnxruntime": "1.20.0"}))


def test_versions_and_the_assumed_target(monkeypatch):
    assert _target.parse("1.32", "t") == (1, 32, 0) and _target.parse("1.33.0.dev20260101", "t") == (1, 33, 0)
    with pytest.raises(tonnx.TonnxError, match="not an onnxruntime version"):
        _target.resolve({"onnxruntime": "latest"})
    monkeypatch.setattr(_target, "installed", lambda: None)
    assumed = _target.resolve({})
    assert assumed.version == _target.OLDEST and "no onnxruntime installed" in str(assumed)
