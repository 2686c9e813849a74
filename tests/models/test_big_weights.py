"""A model built on the ``meta`` device exports with its weights streamed from safetensors."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

import tonnx
from tonnx.testing import run_onnxruntime

from .transformer_models import CausalLMLogits, _decoder_kwargs


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A small Llama, its weights saved as two safetensors shards, and the same model on
    'meta' (only the rotary embedding, a non-persistent buffer, is built on CPU)."""
    import transformers
    from safetensors.torch import save_file

    folder = tmp_path_factory.mktemp("ckpt")
    config = transformers.LlamaConfig(**_decoder_kwargs())
    torch.manual_seed(0)
    real = CausalLMLogits(transformers.AutoModelForCausalLM.from_config(config)).eval()
    state = {k: v.contiguous() for k, v in real.state_dict().items()}
    names = sorted(state)
    for i, part in enumerate((names[::2], names[1::2])):
        save_file({k: state[k] for k in part}, str(folder / f"model-{i}.safetensors"))
    with torch.device("meta"):
        meta = CausalLMLogits(transformers.AutoModelForCausalLM.from_config(config)).eval()
    meta.model.model.rotary_emb = type(meta.model.model.rotary_emb)(config)
    gen = torch.Generator().manual_seed(1)
    args = (torch.randint(0, config.vocab_size, (2, 12), generator=gen), torch.ones(2, 12, dtype=torch.int64))
    return folder, real, meta, args


@pytest.mark.parametrize("external", [False, True])
def test_meta_model_with_safetensors_weights_matches_torch(checkpoint, tmp_path, external):
    folder, real, meta, args = checkpoint
    path = str(tmp_path / "llama.onnx")
    tonnx.to_onnx(meta, args, filename=path, weights=str(folder / "*.safetensors"), external_data=external)
    assert sorted(os.listdir(tmp_path)) == (["llama.onnx", "llama.onnx.data"] if external else ["llama.onnx"])
    model = onnx.load(path)
    # every weight landed in the initializer of its name
    state = real.state_dict()
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    landed = [name for name in state if name in inits]
    # with tonnx-ortcontrib, each layer's q/k/v land packed in one [K, Nq + Nk + Nv]
    # initializer derived from the three checkpoint tensors while the file is written
    packed = [name for name in state if name not in inits and name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight"))]
    for layer in sorted({name.rsplit(".self_attn.", 1)[0] for name in packed}):
        parts = [state[f"{layer}.self_attn.{p}_proj.weight"].numpy() for p in "qkv"]
        want = np.concatenate([w.T for w in parts], axis=1)
        assert any(v.shape == want.shape and np.array_equal(v, want) for v in inits.values()), layer
    # a Linear weight read through a Transpose lands transposed, as the MatMul reads it
    transposed = [name for name in state if f"{name}.transposed" in inits]
    assert len(landed) + len(packed) + len(transposed) >= len(state) - 2  # all but the rotary buffers (folded)
    for name in landed:
        np.testing.assert_array_equal(inits[name], state[name].numpy(), err_msg=name)
    for name in transposed:
        np.testing.assert_array_equal(inits[f"{name}.transposed"], state[name].numpy().T, err_msg=name)
    (got,) = run_onnxruntime(model, [a.numpy() for a in args])
    np.testing.assert_allclose(got, real(*args).detach().numpy(), rtol=1e-4, atol=1e-4)


def test_streamed_weights_stay_in_the_data_file(checkpoint, tmp_path):
    """The proto returned references the data file: the weights are never all in memory
    (tonnx export-llm streams a model smaller than 2 GB too)."""
    folder, _, meta, args = checkpoint
    onx = tonnx.to_onnx(meta, args, filename=tmp_path / "m.onnx", weights=str(folder / "*.safetensors"),
                        external_data=True)
    external = [t for t in onx.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert external and not any(t.raw_data for t in external)
    assert {e.value for t in external for e in t.external_data if e.key == "location"} == {"m.onnx.data"}


def test_missing_weight_is_named(checkpoint, tmp_path):
    from safetensors.torch import load_file, save_file

    folder, _, meta, args = checkpoint
    state = load_file(str(folder / "model-0.safetensors"))
    missing = sorted(state)[0]
    del state[missing]
    save_file(state, str(tmp_path / "partial.safetensors"))
    weights = [str(tmp_path / "partial.safetensors"), str(folder / "model-1.safetensors")]
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(tonnx.OutputFileError, match=missing.replace(".", r"\.")):
        tonnx.to_onnx(meta, args, filename=out / "m.onnx", weights=weights)
    assert os.listdir(out) == []


def test_meta_model_without_weights_is_refused(checkpoint):
    _, _, meta, args = checkpoint
    with pytest.raises(tonnx.OutputFileError, match="meta"):
        tonnx.to_onnx(meta, args)


def test_meta_model_to_a_file_without_weights_is_refused(checkpoint, tmp_path):
    _, _, meta, args = checkpoint
    with pytest.raises(tonnx.OutputFileError, match="meta.*weights="):
        tonnx.to_onnx(meta, args, filename=tmp_path / "m.onnx")
    assert os.listdir(tmp_path) == []
