"""Causal LMs exported with their KV cache, called as people call them (no wrapper).

One export per model serves every step: cache lengths 0 (the first step), 1 and 37, batch 1
and 3, left and right padding; a greedy loop in onnxruntime gives generate()'s tokens.
"""

from __future__ import annotations

import inspect

import numpy as np
import onnxruntime as ort
import pytest
import torch

import tonnx

from . import transformer_models as T

transformers = pytest.importorskip("transformers")
from transformers.cache_utils import DynamicCache, EncoderDecoderCache  # noqa: E402

ATOL = 1e-4
DYNAMIC = {
    "input_ids": {0: "batch", 1: "seq"},
    "attention_mask": {0: "batch", 1: "total"},
    "position_ids": {0: "batch", 1: "seq"},
    "past_key_values": {0: "batch", 2: "past"},
}


def _geometry(config) -> tuple[int, int, int]:
    """(layers, key/value heads, head size) of a decoder's cache."""
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return config.num_hidden_layers, kv_heads, head_dim


def _mask(batch: int, total: int, padding: str) -> torch.Tensor:
    """Row i has 2*i padded positions (at least one real one), at the start or at the end."""
    mask = torch.ones(batch, total, dtype=torch.int64)
    for i in range(1, batch):
        pad = min(2 * i, total - 1)
        if padding == "left":
            mask[i, :pad] = 0
        else:
            mask[i, total - pad :] = 0
    return mask


def _positions(mask: torch.Tensor, seq: int) -> torch.Tensor:
    """Position ids as generate() computes them from the mask."""
    pos = mask.cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 1)[:, -seq:]


def _inputs(config, batch: int, seq: int, past: int, padding: str, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    layers, kv_heads, head_dim = _geometry(config)
    mask = _mask(batch, past + seq, padding)
    cache = DynamicCache(
        [
            tuple(torch.randn(batch, kv_heads, past, head_dim, generator=gen) for _ in range(2))
            for _ in range(layers)
        ]
    )
    return {
        "input_ids": torch.randint(0, config.vocab_size, (batch, seq), generator=gen),
        "attention_mask": mask,
        "position_ids": _positions(mask, seq),
        "past_key_values": cache,
    }


def _feeds(inputs: dict) -> dict[str, np.ndarray]:
    feeds = {k: v.numpy() for k, v in inputs.items() if k != "past_key_values"}
    for i, layer in enumerate(inputs["past_key_values"].layers):
        feeds[f"past_key_values.{i}.key"] = layer.keys.numpy()
        feeds[f"past_key_values.{i}.value"] = layer.values.numpy()
    return feeds


def _expected(model, inputs: dict) -> dict[str, np.ndarray]:
    with torch.no_grad():
        out = model(**inputs, use_cache=True)
    expected = {"logits": out.logits.numpy()}
    for i, layer in enumerate(out.past_key_values.layers):
        expected[f"present.{i}.key"] = layer.keys.numpy()
        expected[f"present.{i}.value"] = layer.values.numpy()
    return expected


def _greedy_onnxruntime(sess, config, ids: torch.Tensor, mask: torch.Tensor, steps: int) -> np.ndarray:
    """generate()'s greedy loop, in onnxruntime: the first step runs with an empty cache."""
    layers, kv_heads, head_dim = _geometry(config)
    batch = ids.shape[0]
    empty = np.zeros((batch, kv_heads, 0, head_dim), dtype=np.float32)
    past = {f"past_key_values.{i}.{kind}": empty for i in range(layers) for kind in ("key", "value")}
    mask, step_ids, tokens = mask.numpy(), ids.numpy(), []
    for _ in range(steps):
        positions = _positions(torch.from_numpy(mask), step_ids.shape[1]).numpy()
        names = [o.name for o in sess.get_outputs()]
        feeds = {"input_ids": step_ids, "attention_mask": mask, "position_ids": positions, **past}
        out = dict(zip(names, sess.run(None, feeds)))
        step_ids = out["logits"][:, -1].argmax(-1)[:, None].astype(np.int64)
        tokens.append(step_ids)
        past = {k.replace("present", "past_key_values"): v for k, v in out.items() if k != "logits"}
        mask = np.concatenate([mask, np.ones((batch, 1), dtype=mask.dtype)], axis=1)
    return np.concatenate(tokens, axis=1)


def _check_steps(model, sess, cases) -> None:
    """onnxruntime's logits and presents equal torch's for each (past, batch, seq, padding)."""
    names = [o.name for o in sess.get_outputs()]
    for past, batch, seq, padding in cases:
        inputs = _inputs(model.config, batch, seq, past, padding, seed=past + batch)
        got = dict(zip(names, sess.run(None, _feeds(inputs))))
        for key, value in _expected(model, inputs).items():
            assert got[key].shape == value.shape, (key, past, batch, padding)
            np.testing.assert_allclose(got[key], value, atol=ATOL, rtol=1e-4, err_msg=f"{key} {past=} {batch=} {padding}")


def _check_greedy(model, sess) -> None:
    """A greedy loop of 20 tokens in onnxruntime, from an empty cache, equals generate()."""
    config = model.config
    ids = torch.randint(0, config.vocab_size, (2, 6), generator=torch.Generator().manual_seed(7))
    mask = _mask(2, 6, "left")
    model.generation_config.eos_token_id = None
    with torch.no_grad():
        expected = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=20, do_sample=False, pad_token_id=0
        )[:, 6:].numpy()
    np.testing.assert_array_equal(_greedy_onnxruntime(sess, config, ids, mask, 20), expected)


@pytest.mark.parametrize("name", ["llama", "mistral", "qwen2", "gpt2"])
def test_causal_lm_with_cache(name):
    model = T.MODELS[name]()[0].model
    config = model.config
    onx = tonnx.to_onnx(model, kwargs=_inputs(config, 2, 3, 5, "left", 0), dynamic_shapes=DYNAMIC)
    layers = config.num_hidden_layers
    cache_names = [f"{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    assert [i.name for i in onx.graph.input] == [
        "input_ids", "attention_mask", "position_ids", *(f"past_key_values.{c}" for c in cache_names)
    ]
    assert [o.name for o in onx.graph.output] == ["logits", *(f"present.{c}" for c in cache_names)]
    dims = [d.dim_param or d.dim_value for d in onx.graph.output[1].type.tensor_type.shape.dim]
    assert dims[0] == "batch" and dims[2] == "past + seq", dims

    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    _check_steps(model, sess, [
        (0, 1, 4, "left"), (0, 3, 4, "right"), (1, 3, 1, "left"), (1, 1, 3, "right"),
        (37, 3, 1, "left"), (37, 3, 2, "right"), (37, 1, 1, "left"),
    ])  # fmt: skip
    _check_greedy(model, sess)


def test_cache_argument_by_its_new_name():
    """transformers 5.24 calls the argument ``cache`` (``past_key_values`` still accepted):
    the ONNX names are the conventional ones either way."""
    model = T.MODELS["llama"]()[0].model
    if "cache" not in inspect.signature(model.forward).parameters:
        pytest.skip("this transformers names the argument past_key_values only")
    inputs = _inputs(model.config, 2, 3, 5, "left", 0)
    inputs["cache"] = inputs.pop("past_key_values")
    dynamic = {**DYNAMIC, "cache": DYNAMIC["past_key_values"]}
    del dynamic["past_key_values"]
    onx = tonnx.to_onnx(model, kwargs=inputs, dynamic_shapes=dynamic)
    assert [i.name for i in onx.graph.input][3:5] == ["past_key_values.0.key", "past_key_values.0.value"]
    assert [o.name for o in onx.graph.output][:2] == ["logits", "present.0.key"]
    inputs = _inputs(model.config, 3, 2, 9, "right", 1)
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, _feeds(inputs))))
    for key, value in _expected(model, inputs).items():
        np.testing.assert_allclose(got[key], value, atol=ATOL, rtol=1e-4, err_msg=key)


def _t5_inputs(config, batch: int, past: int, enc: int, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    heads, d_kv = config.num_heads, config.d_kv

    def cache(length):
        return DynamicCache(
            [
                tuple(torch.randn(batch, heads, length, d_kv, generator=gen) for _ in range(2))
                for _ in range(config.num_decoder_layers)
            ]
        )

    mask = torch.ones(batch, enc, dtype=torch.int64)
    mask[1:, : enc // 3] = 0
    return {
        "decoder_input_ids": torch.randint(0, config.vocab_size, (batch, 1), generator=gen),
        "encoder_outputs": (torch.randn(batch, enc, config.d_model, generator=gen),),
        "attention_mask": mask,
        "past_key_values": EncoderDecoderCache(cache(past), cache(enc)),
    }


def _check_t5_step(model):
    """The decoder step of an encoder-decoder: self-attention cache grows, cross-attention's is reused."""
    config = model.config
    dynamic = {
        "decoder_input_ids": {0: "batch"},
        "encoder_outputs": {0: "batch", 1: "encoder_sequence"},
        "attention_mask": {0: "batch", 1: "encoder_sequence"},
        # one spec per cache of the pair: the self-attention cache, the cross-attention cache
        "past_key_values": [{0: "batch", 2: "past"}, {0: "batch", 2: "encoder_sequence"}],
    }
    onx = tonnx.to_onnx(model, kwargs=_t5_inputs(config, 2, 4, 6, 0), dynamic_shapes=dynamic)
    names = [i.name for i in onx.graph.input]
    assert names[:3] == ["decoder_input_ids", "encoder_outputs.0", "attention_mask"], names
    assert names[3:7] == [
        "past_key_values.0.decoder.key", "past_key_values.0.decoder.value",
        "past_key_values.1.decoder.key", "past_key_values.1.decoder.value",
    ], names
    assert names[7] == "past_key_values.0.encoder.key", names
    outputs = [o.name for o in onx.graph.output]
    assert outputs[:2] == ["logits", "present.0.decoder.key"], outputs

    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch, past, enc in [(1, 1, 5), (3, 37, 9)]:
        inputs = _t5_inputs(config, batch, past, enc, seed=past)
        feeds = dict(zip(names, [t.numpy() for t in torch.utils._pytree.tree_leaves(
            [inputs[k] for k in ("decoder_input_ids", "encoder_outputs", "attention_mask")]
        )]))
        for i, layer in enumerate(inputs["past_key_values"].self_attention_cache.layers):
            feeds[f"past_key_values.{i}.decoder.key"] = layer.keys.numpy()
            feeds[f"past_key_values.{i}.decoder.value"] = layer.values.numpy()
        for i, layer in enumerate(inputs["past_key_values"].cross_attention_cache.layers):
            feeds[f"past_key_values.{i}.encoder.key"] = layer.keys.numpy()
            feeds[f"past_key_values.{i}.encoder.value"] = layer.values.numpy()
        got = dict(zip(outputs, sess.run(None, feeds)))
        with torch.no_grad():
            out = model(**inputs, use_cache=True)
        np.testing.assert_allclose(got["logits"], out.logits.numpy(), atol=ATOL, rtol=1e-4)
        for i, layer in enumerate(out.past_key_values.self_attention_cache.layers):
            np.testing.assert_allclose(got[f"present.{i}.decoder.key"], layer.keys.numpy(), atol=ATOL)
            np.testing.assert_allclose(got[f"present.{i}.decoder.value"], layer.values.numpy(), atol=ATOL)
    return onx


def test_t5_decoder_with_cache():
    """T5's decoder step with an EncoderDecoderCache; the first decoder step (empty caches:
    cross-attention keys computed from the encoder output) is its own export, whose presents
    feed the cached step's model."""
    model = T.t5()[0].model
    config = model.config
    step = _check_t5_step(model)

    def first_inputs(batch, enc, seed):
        gen = torch.Generator().manual_seed(seed)
        return {
            "decoder_input_ids": torch.randint(0, config.vocab_size, (batch, 1), generator=gen),
            "encoder_outputs": (torch.randn(batch, enc, config.d_model, generator=gen),),
            "attention_mask": torch.ones(batch, enc, dtype=torch.int64),
            "past_key_values": EncoderDecoderCache(DynamicCache(), DynamicCache()),
        }

    first = tonnx.to_onnx(
        model,
        kwargs=first_inputs(2, 6, 0),
        dynamic_shapes={
            "decoder_input_ids": {0: "batch"},
            "encoder_outputs": {0: "batch", 1: "encoder_sequence"},
            "attention_mask": {0: "batch", 1: "encoder_sequence"},
        },
    )
    first_sess = ort.InferenceSession(first.SerializeToString(), providers=["CPUExecutionProvider"])
    step_sess = ort.InferenceSession(step.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = first_inputs(3, 9, 1)
    hidden = inputs["encoder_outputs"][0]
    feeds = {
        "decoder_input_ids": inputs["decoder_input_ids"].numpy(),
        "encoder_outputs.0": hidden.numpy(),
        "attention_mask": inputs["attention_mask"].numpy(),
    }
    names = [o.name for o in first_sess.get_outputs()]
    got = dict(zip(names, first_sess.run(None, feeds)))
    with torch.no_grad():
        out = model(**inputs, use_cache=True)
    np.testing.assert_allclose(got["logits"], out.logits.numpy(), atol=ATOL, rtol=1e-4)

    next_ids = out.logits[:, -1:].argmax(-1)
    step_feeds = {**feeds, "decoder_input_ids": next_ids.numpy()}
    step_feeds.update({k.replace("present", "past_key_values"): v for k, v in got.items() if k.startswith("present.")})
    step_names = [o.name for o in step_sess.get_outputs()]
    got = dict(zip(step_names, step_sess.run(None, {i.name: step_feeds[i.name] for i in step_sess.get_inputs()})))
    with torch.no_grad():
        out = model(
            decoder_input_ids=next_ids, encoder_outputs=(hidden,), attention_mask=inputs["attention_mask"],
            past_key_values=out.past_key_values, use_cache=True,
        )
    np.testing.assert_allclose(got["logits"], out.logits.numpy(), atol=ATOL, rtol=1e-4)
