"""export-llm traces attention as one op, then restores torch's op (llm/traced_attention.py)."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

import llm_folders  # noqa: E402
import torch  # noqa: E402

import tonnx  # noqa: E402
from tonnx_transformers.llm.inputs import example_call  # noqa: E402
from tonnx_transformers.llm.traced_attention import (  # noqa: E402
    OP_NAME,
    attention_as_one_op,
    restore_attention,
)

SDPA = torch.ops.aten.scaled_dot_product_attention.default


def _program(model, one_op: bool):
    kwargs, dynamic = example_call(model, model.config, device="cpu")
    if not one_op:
        return tonnx.export_program(model, kwargs=kwargs, dynamic_shapes=dynamic)
    with attention_as_one_op():
        program = tonnx.export_program(model, kwargs=kwargs, dynamic_shapes=dynamic)
    assert restore_attention(program) == model.config.num_hidden_layers
    return program


def _calls(program) -> list:
    return [n for n in program.graph.nodes if n.target is SDPA]


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_restored_program_is_torchs_program_without_repeat_kv(name):
    model = llm_folders.model(name)
    model.config.use_cache = True
    plain, traced = _program(model, one_op=False), _program(model, one_op=True)
    assert not any(OP_NAME in str(n.target) for n in traced.graph.nodes)
    calls = _calls(traced)
    assert len(calls) == len(_calls(plain)) == model.config.num_hidden_layers
    heads = model.config.num_attention_heads
    grouped = getattr(model.config, "num_key_value_heads", heads) != heads
    # grouped heads go in as they are (enable_gqa) instead of through repeat_kv's expand
    assert all(c.kwargs["enable_gqa"] is grouped for c in calls)
    expands = [sum(n.target is torch.ops.aten.expand.default for n in p.graph.nodes) for p in (plain, traced)]
    assert expands[1] == expands[0] - (2 * len(calls) if grouped else 0)
    # the same guards as torch's kernel: every layer's keys share one symbolic length,
    # the one of the mask's last dimension
    lengths = {str(c.args[1].meta["val"].shape[2]) for c in calls}
    assert lengths == {str(calls[0].args[3].meta["val"].shape[-1])}
    # the same inputs, dynamic in the same places (torch's kernel leaves a value's length
    # its own symbol, only equal to the key's at run time; the op's check makes it one)
    assert _input_dims(traced) == _input_dims(plain)


def _input_dims(program) -> list:
    """The inputs' shapes, "dyn" for each symbolic size."""
    return [
        tuple(d if type(d) is int else "dyn" for d in node.meta["val"].shape)
        for node in program.graph.nodes
        if node.op == "placeholder" and isinstance(node.meta.get("val"), torch.Tensor)
    ]


def test_restored_program_computes_what_the_model_does():
    model = llm_folders.model("llama")
    model.config.use_cache = True
    program = _program(model, one_op=True)

    def call():  # a fresh cache each time: the model appends to it
        kwargs, _ = example_call(model, model.config, device="cpu")
        torch.manual_seed(1)
        kwargs["input_ids"] = torch.randint(0, llm_folders.VOCAB, kwargs["input_ids"].shape)
        kwargs["attention_mask"][0, :2] = 0  # a left-padded row
        for layer in kwargs["past_key_values"].layers:
            layer.keys.normal_(), layer.values.normal_()
        return kwargs

    with torch.no_grad():
        want = model(**call()).logits
        got = program.module()(**call())[0]
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_block_restores_torch_and_transformers_on_error():
    from transformers.integrations import sdpa_attention

    saved = torch.nn.functional.scaled_dot_product_attention, sdpa_attention.use_gqa_in_sdpa
    with pytest.raises(RuntimeError, match="inside"):
        with attention_as_one_op():
            assert torch.nn.functional.scaled_dot_product_attention is not saved[0]
            raise RuntimeError("inside")
    assert (torch.nn.functional.scaled_dot_product_attention, sdpa_attention.use_gqa_in_sdpa) == saved


def test_op_runs_torchs_attention_eagerly():
    q, k, v = torch.randn(2, 4, 3, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    mask = torch.randn(2, 1, 3, 5)
    with attention_as_one_op():
        got = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


class AttentionInABranch(torch.nn.Module):
    """Attention inside ``torch.cond``'s branches: traced into subgraphs of the program."""

    def forward(self, q, k, v):
        def attend(q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)

        def doubled(q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v) * 2

        return torch.cond(q.sum() > 0, attend, doubled, (q, k, v))


def test_attention_in_subgraphs_is_restored_too():
    q, k, v = (torch.randn(1, 2, 3, 4, generator=torch.Generator().manual_seed(i)) for i in range(3))
    with attention_as_one_op():
        program = torch.export.export(AttentionInABranch(), (q, k, v))
    assert restore_attention(program) == 2
    targets = {node.target for m in program.graph_module.modules() if isinstance(m, torch.fx.GraphModule)
               for node in m.graph.nodes}
    assert torch.ops.aten.scaled_dot_product_attention.default in targets
    assert not any("tonnx_transformers" in str(t) for t in targets)
    for sign in (1, -1):
        torch.testing.assert_close(program.module()(sign * q, k, v), AttentionInABranch()(sign * q, k, v))
