"""The cache classes' pytree registration, across the exports of one process (issue 17, 0.1).

With ``optree`` installed, torch mirrors every pytree registration into its C++ registry;
tonnx used to register ``DynamicCache`` around each export and remove it from the Python
registry only, so every export after the first failed with ``ValueError: PyTree type
<class 'transformers.cache_utils.DynamicCache'> is already registered in namespace 'torch'``.
What a process did before matters here, so each sequence runs in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import tonnx

transformers = pytest.importorskip("transformers")
from transformers.cache_utils import DynamicCache  # noqa: E402

#: a tiny Llama (2 layers, random weights) exported with its cache, its logits checked in
#: onnxruntime; the names of the cache inputs and outputs checked
PRELUDE = """
import numpy as np
import torch
import transformers
from torch.utils import _pytree
from transformers.cache_utils import DynamicCache

import tonnx
from tonnx.testing import run_onnxruntime

config = transformers.LlamaConfig(
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, vocab_size=64, max_position_embeddings=64,
)
torch.manual_seed(0)
llama = transformers.LlamaForCausalLM(config).eval()


def inputs(past):
    cache = DynamicCache([(torch.randn(1, 2, past, 8), torch.randn(1, 2, past, 8)) for _ in range(2)])
    ids = torch.randint(0, 64, (1, 3))
    return {"input_ids": ids, "attention_mask": torch.ones(1, past + 3, dtype=torch.int64),
            "past_key_values": cache}


def export_llama():
    # (no ortcontrib: its fused attention depends on the onnxruntime version, not checked here)
    onx = tonnx.to_onnx(llama, kwargs=inputs(5), dispatcher=tonnx.Dispatcher(packs=["no:ortcontrib"]))
    names = [i.name for i in onx.graph.input] + [o.name for o in onx.graph.output]
    for name in ("past_key_values.1.key", "past_key_values.1.value", "present.1.key", "logits"):
        assert name in names, names
    feeds = inputs(5)
    flat = [feeds["input_ids"], feeds["attention_mask"]]
    flat += [t for layer in feeds["past_key_values"].layers for t in (layer.keys, layer.values)]
    got = run_onnxruntime(onx, [t.numpy() for t in flat])[0]
    with torch.no_grad():  # (after: the model appends to the cache)
        want = llama(**feeds).logits.numpy()
    assert np.abs(got - want).max() < 1e-4, np.abs(got - want).max()


def export_linear():
    onx = tonnx.to_onnx(torch.nn.Linear(3, 4), (torch.randn(2, 3),))
    assert [n.op_type for n in onx.graph.node] == ["Gemm"], onx.graph.node
"""


def _run(body: str) -> None:
    code = PRELUDE + textwrap.dedent(body) + '\nprint("done")\n'
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("done"), result.stderr[-3000:]


def test_one_process_many_exports():
    """Was: the second export (the Linear) failed with 'already registered in namespace
    torch'. Then torch.onnx.export, tonnx again, and transformers' own registration made
    after tonnx's, which returns quietly (tonnx's stays). One process: each costs ~10 s of
    imports."""
    _run("""
        export_llama()
        export_linear()
        export_llama()
        program = torch.onnx.export(torch.nn.Linear(3, 4), (torch.randn(2, 3),), dynamo=True)
        assert program.model_proto.graph.node
        export_llama()
        from transformers.integrations.executorch import register_dynamic_cache_export_support

        register_dynamic_cache_export_support()
        assert _pytree.SUPPORTED_NODES[DynamicCache].flatten_fn.__module__ == "tonnx_transformers.cache"
        export_linear()
        export_llama()
        try:
            from torch.utils import _cxx_pytree
        except ImportError:  # no optree
            pass
        else:  # the C++ registry agrees with the Python one
            assert len(_cxx_pytree.tree_leaves(inputs(4)["past_key_values"])) == 4
    """)


def test_the_users_own_registration_is_kept():
    """transformers' registration made first is what the user finds after tonnx's exports,
    in the Python registry and (when optree is installed) in the C++ one."""
    _run("""
        from transformers.integrations.executorch import register_dynamic_cache_export_support

        register_dynamic_cache_export_support()
        theirs = _pytree.SUPPORTED_NODES[DynamicCache]
        export_llama()
        export_linear()
        export_llama()
        assert _pytree.SUPPORTED_NODES[DynamicCache] is theirs
        cache = inputs(4)["past_key_values"]
        spec = _pytree.tree_flatten(cache)[1]
        assert spec.context[0] == ["key_cache", "value_cache"], spec.context  # theirs
        try:
            from torch.utils import _cxx_pytree
        except ImportError:  # no optree
            pass
        else:
            assert len(_cxx_pytree.tree_leaves(cache)) == 4
        torch.export.export(torch.nn.Identity(), (cache,))  # theirs still traces
    """)


# -- in this process ------------------------------------------------------------------------


def test_export_patches_register_the_cache_for_the_process():
    from torch.utils import _pytree

    with tonnx.export_patches():
        with tonnx.export_patches():  # nested: a no-op
            ours = _pytree.SUPPORTED_NODES[DynamicCache]
        assert _pytree.SUPPORTED_NODES[DynamicCache] is ours
        cache = DynamicCache([(torch.randn(2, 2, 3, 4), torch.randn(2, 2, 3, 4))])
        leaves, spec = _pytree.tree_flatten(cache)
        assert len(leaves) == 2
        rebuilt = _pytree.tree_unflatten(leaves, spec)
        assert rebuilt.layers[0].keys is leaves[0] and rebuilt.get_seq_length() == 3
    assert _pytree.SUPPORTED_NODES[DynamicCache] is ours  # once per process, never removed


def test_another_registration_is_set_aside_for_the_block():
    """In the Python registry only (what torch.export reads), then put back as it was."""
    from torch.utils import _pytree

    with tonnx.export_patches():
        ours = _pytree.SUPPORTED_NODES[DynamicCache]
    theirs = ours._replace(flatten_fn=lambda cache: ([], None))
    _pytree.SUPPORTED_NODES[DynamicCache] = theirs
    try:
        with tonnx.export_patches():
            assert _pytree.SUPPORTED_NODES[DynamicCache].flatten_fn is ours.flatten_fn
        assert _pytree.SUPPORTED_NODES[DynamicCache] is theirs
    finally:
        _pytree.SUPPORTED_NODES[DynamicCache] = ours


class Weigh(torch.nn.Module):
    """Weighs each cache tensor differently, so inputs fed under the wrong names show."""

    def forward(self, x, past_key_values):
        for i, layer in enumerate(past_key_values.layers):
            x = x + layer.keys * (2 * i + 1) + layer.values * (2 * i + 2)
        return x


def _transformers_node(ours):
    """What transformers' register_dynamic_cache_export_support registers (keys, then values)."""
    from transformers.integrations import executorch as ex

    def with_keys(cache):
        return ex._flatten_cache_dict_with_keys(ex._get_cache_dict(cache), ex._get_dynamic_cache_layout(cache))

    def flatten(cache):
        return ex._flatten_cache_dict(ex._get_cache_dict(cache), ex._get_dynamic_cache_layout(cache))

    return ours._replace(flatten_fn=flatten, unflatten_fn=ex._unflatten_dynamic_cache, flatten_with_keys_fn=with_keys)


def test_names_never_mislabel_after_the_registration_changed():
    """export_program under the pack's registration (leaves k0, v0, k1, v1), convert under
    transformers' (k0, k1, v0, v1): the names read off the new paths labelled v0 as
    'past_key_values.key_cache.1'; a user feeding by name got wrong numbers. Now the names
    are torch's, which follow the program's own order."""
    from torch.utils import _pytree

    from tonnx.testing import run_onnxruntime

    cache = DynamicCache([(torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)) for _ in range(2)])
    x = torch.randn(1, 2, 3, 4)
    ep = tonnx.export_program(Weigh(), (x,), {"past_key_values": cache})
    ours = _pytree.SUPPORTED_NODES[DynamicCache]
    _pytree.SUPPORTED_NODES[DynamicCache] = _transformers_node(ours)
    try:
        onx = tonnx.convert(ep)
    finally:
        _pytree.SUPPORTED_NODES[DynamicCache] = ours
    names = [i.name for i in onx.graph.input]
    assert not any("key_cache" in n or "value_cache" in n for n in names), names
    by_name = {"x": x}
    for i, layer in enumerate(cache.layers):  # whatever the separator, layer and kind in order
        by_name.update({n: t for n, t in zip(names[1 + 2 * i: 3 + 2 * i], (layer.keys, layer.values))})
        assert str(i) in names[1 + 2 * i] and "key" in names[1 + 2 * i] and "value" in names[2 + 2 * i], names
    got = run_onnxruntime(onx, [by_name[n].numpy() for n in names])[0]
    torch.testing.assert_close(torch.from_numpy(got), Weigh()(x, cache))


def test_blocking_the_pack_blocks_its_patches():
    from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

    with tonnx.export_patches(dispatcher=tonnx.Dispatcher(packs=["no:transformers"])):
        assert "eager" not in ALL_EXPERTS_FUNCTIONS
    with tonnx.export_patches():
        assert "eager" in ALL_EXPERTS_FUNCTIONS


class CacheUser(torch.nn.Module):
    def forward(self, x, cache):
        k, v = cache.update(x, x, 0)
        return k.sum() + v.sum()


def test_no_lifted_constant_from_the_cache():
    """torch.onnx fails on transformers' registration: 'Constant tensor lifted_tensor_N is not
    in the constants dictionary'; the pack's rebuilds the cache without torch.tensor([])."""
    cache = DynamicCache([(torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4))])
    with tonnx.export_patches():
        ep = torch.export.export(CacheUser(), (torch.randn(1, 2, 1, 4), cache))
    assert not ep.constants
