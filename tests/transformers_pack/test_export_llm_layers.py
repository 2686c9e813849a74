"""export-llm traces two decoder layers and copies the second (llm/layer_reuse.py, issue 32 item 5).

The copied program must convert to the graph the whole trace gives (same ops in the same
order, same inputs, outputs and weights, the same numbers in onnxruntime), pass the greedy
check against transformers, and a model whose layers differ must be traced whole, saying why.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import llm_folders  # noqa: E402

from tonnx_transformers.llm import layer_reuse  # noqa: E402
from tonnx_transformers.llm.export import export_llm  # noqa: E402
from tonnx_transformers.llm.layer_graph import LayersDiffer, layer_template  # noqa: E402

FOUR = {**llm_folders.COMMON, "num_hidden_layers": 4}


def _save(config, folder):
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).eval().save_pretrained(folder)
    return folder


def _feeds(session):
    rng = np.random.default_rng(0)
    feeds = {}
    for i in session.get_inputs():
        if i.name == "input_ids":
            feeds[i.name] = rng.integers(4, 200, (2, 3)).astype(np.int64)
        elif i.name == "attention_mask":
            feeds[i.name] = np.array([[0, 1, 1, 1, 1, 1, 1, 1], [1] * 8], np.int64)
        elif i.name == "position_ids":
            feeds[i.name] = np.array([[4, 5, 6], [5, 6, 7]], np.int64)
        else:  # a cache input (batch, heads, past 5, head size)
            shape = [2, i.shape[1], 5, i.shape[3]]
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def test_copied_layers_give_the_whole_traces_graph(tmp_path, monkeypatch):
    import onnx
    import onnxruntime as ort

    source = _save(transformers.Qwen3Config(**FOUR, head_dim=16), tmp_path / "qwen3")
    copied = export_llm(source, tmp_path / "copied", tokenizer=False)  # greedy check included
    assert copied.trace == "2 of 4 decoder layers traced, 2 copied"
    assert copied.check is not None
    monkeypatch.setattr(layer_reuse, "decoder_layers", lambda model, config: "turned off by the test")
    whole = export_llm(source, tmp_path / "whole", tokenizer=False, verify=False)
    assert whole.trace == "traced whole: turned off by the test"
    a, b = (onnx.load(str(tmp_path / name / "model.onnx"), load_external_data=False) for name in ("copied", "whole"))
    assert [n.op_type for n in a.graph.node] == [n.op_type for n in b.graph.node]
    assert [n.domain for n in a.graph.node] == [n.domain for n in b.graph.node]
    for part in ("input", "output", "initializer"):
        assert [x.name for x in getattr(a.graph, part)] == [x.name for x in getattr(b.graph, part)]
    sessions = [ort.InferenceSession(str(tmp_path / name / "model.onnx"), providers=["CPUExecutionProvider"])
                for name in ("copied", "whole")]
    feeds = _feeds(sessions[0])
    for x, y in zip(*(s.run(None, feeds) for s in sessions)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name, config, why", [
    # sliding and full attention alternate: each layer reads another mask
    ("gemma2", lambda: transformers.Gemma2Config(**FOUR, head_dim=16, sliding_window=8),
     "layer 0's modules differ from layer 1's (self_attn: [('layer_type', \"'sliding_attention'\"), "
     "('sliding_window', '8')] vs [('layer_type', \"'full_attention'\"), ('sliding_window', 'None')])"),
    # a dense MLP on layer 2, MoE blocks elsewhere
    ("qwen3_moe", lambda: transformers.Qwen3MoeConfig(
        **FOUR, **llm_folders.MOE, moe_intermediate_size=32, num_experts=4, head_dim=16,
        decoder_sparse_step=1, mlp_only_layers=[2]),
     "layer 2's modules differ from layer 1's (mlp: Qwen3MoeMLP vs Qwen3MoeSparseMoeBlock; "
     "[('hidden_size', '64'), ('intermediate_size', '128')] vs [])"),
])
def test_layers_that_differ_are_traced_whole(name, config, why):
    import tonnx
    from tonnx_transformers.llm.traced_attention import attention_as_one_op

    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config()).eval()
    model.config.use_cache = True
    with attention_as_one_op():
        trace = layer_reuse.export_program(tonnx, model, model.config, device="cpu", dispatcher=None)
    assert trace.note == f"traced whole: {why}"
    assert sum(n.op == "placeholder" and n.name.startswith("past_key_values") for n in trace.program.graph.nodes) == 8


def test_a_per_layer_config_entry_that_differs_is_named():
    from types import SimpleNamespace

    layers = torch.nn.ModuleList(torch.nn.Linear(2, 2) for _ in range(4))
    same = SimpleNamespace(num_hidden_layers=4, layer_types=["full"] * 4)
    assert layer_reuse._differing_layer(layers, same) is None
    differ = SimpleNamespace(num_hidden_layers=4, layer_types=["full"] * 3 + ["sliding"])
    assert layer_reuse._differing_layer(layers, differ) == "config.layer_types differs between layers ('full', 'full', ...)"
    assert layer_reuse._differing_layer(torch.nn.ModuleList([*layers[:3], torch.nn.Linear(2, 3)]), same) == (
        "layer 3's modules differ from layer 1's (the layer: [('out_features', '3')] vs [('out_features', '2')]; "
        "[('weight', (3, 2), torch.float32), ('bias', (3,), torch.float32)] vs "
        "[('weight', (2, 2), torch.float32), ('bias', (2,), torch.float32)])")


class _Block(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.lin, self.act = torch.nn.Linear(4, 4), act

    def forward(self, x, mask):
        return x + self.act(self.lin(x)) * mask


class _Stack(torch.nn.Module):
    """Two blocks over a hidden state; block ``i`` reads mask ``masks[i]``, both made from
    one input before the blocks (as a decoder's sliding and full masks)."""

    def __init__(self, acts, masks=(0, 0)):
        super().__init__()
        self.layers = torch.nn.ModuleList(_Block(a) for a in acts)
        self.masks = masks

    def forward(self, x, m):
        masks = (m.exp(), m.cos())
        for layer, which in zip(self.layers, self.masks):
            x = layer(x, masks[which])
        return x.sum(-1)  # a head after the layers


def _program(module):
    return torch.export.export(module, (torch.randn(2, 4), torch.randn(2, 4)))


def test_two_layers_of_one_computation_make_a_template():
    template = layer_template(_program(_Stack([torch.relu, torch.relu])), "layers")
    assert len(template.layer0) == len(template.layer1) > 0
    assert {n.name for n in template.own_inputs} == {"p_layers_1_lin_weight", "p_layers_1_lin_bias"}


@pytest.mark.parametrize("stack, says", [
    (lambda: _Stack([torch.relu, torch.sigmoid]), "aten.relu.default"),  # another op
    (lambda: _Stack([torch.relu, torch.relu], masks=(0, 1)), "reads cos"),  # another shared value
])
def test_layers_computing_otherwise_are_refused(stack, says):
    with pytest.raises(LayersDiffer, match=says):
        layer_template(_program(stack()), "layers")


def test_the_two_layer_trace_is_the_same_without_the_fake_tensor_cache():
    """layer_reuse traces its two layers without torch's fake-tensor dispatch cache (faster):
    the program must be the one traced with it (code, signature, every node's value)."""
    import tonnx
    from tonnx_transformers.llm.inputs import example_call
    from tonnx_transformers.llm.traced_attention import attention_as_one_op

    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.Qwen3Config(**FOUR, head_dim=16)).eval()
    model.config.use_cache = True
    path, _ = layer_reuse.decoder_layers(model, model.config)

    def traced(uncached):
        with attention_as_one_op(), layer_reuse.first_layers(model, model.config, path, 2), \
                (layer_reuse.uncached_fake_dispatch() if uncached else contextlib.nullcontext()):
            kwargs, dynamic = example_call(model, model.config, device="cpu")
            program = tonnx.export_program(model, kwargs=kwargs, dynamic_shapes=dynamic)
        return (program.graph_module.code, str(program.graph_signature),
                [(n.name, str(n.meta.get("val"))) for n in program.graph.nodes])

    assert torch._dynamo.config.fake_tensor_cache_enabled
    assert traced(uncached=True) == traced(uncached=False)
    assert torch._dynamo.config.fake_tensor_cache_enabled  # restored
