"""``tonnx export-llm``: a transformers folder -> a folder onnxruntime-genai runs (issue 18 s1).

One tiny Llama folder (2 layers, hidden 64) is exported once through the command (the
``exported`` fixture of conftest.py, shared with test_export_llm_graph.py); the folder is
opened by onnxruntime-genai, whose greedy tokens must equal transformers'
``generate(do_sample=False)``. The other tests need no export or fail before one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from tonnx.cli import main

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import llm_folders  # noqa: E402


def _genai():
    return pytest.importorskip(
        "onnxruntime_genai",
        reason="onnxruntime-genai is not installed (pip install -e '.[test]' installs it)",
    )


def test_folder_contents(exported):
    source, out, model = exported
    assert sorted(os.listdir(out)) == [
        "genai_config.json", "model.onnx", "model.onnx.data", "tokenizer.json", "tokenizer_config.json",
    ]
    assert not [p for p in os.listdir(out.parent) if p.startswith(".")]  # staging renamed
    config = json.loads((out / "genai_config.json").read_text())
    decoder = config["model"]["decoder"]
    assert decoder["inputs"] == {
        "input_ids": "input_ids", "attention_mask": "attention_mask", "position_ids": "position_ids",
        "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value",
    }
    assert decoder["outputs"]["present_key_names"] == "present.%d.key"
    cfg = model.config
    assert (decoder["num_hidden_layers"], decoder["num_key_value_heads"], decoder["head_size"]) == (
        cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.hidden_size // cfg.num_attention_heads)
    assert config["model"]["eos_token_id"] == model.generation_config.eos_token_id
    # one max_length buffer per cache, updated in place by GroupQueryAttention (onnxruntime 1.32)
    assert config["search"]["past_present_share_buffer"] is llm_folders.fused_attention_with_cache()


def test_genai_greedy_tokens_equal_transformers(exported):
    og = _genai()
    _, out, model = exported
    got, want = llm_folders.genai_tokens(og, out, 16), llm_folders.transformers_tokens(model, 16)
    assert len(got) >= 8 and got == want


def test_genai_tokenizer_loads_the_copied_files(exported):
    og = _genai()
    source, out, _ = exported
    tokenizer = og.Tokenizer(og.Model(str(out)))
    want = transformers.AutoTokenizer.from_pretrained(source)("hello, genai").input_ids
    assert [int(i) for i in tokenizer.encode("hello, genai")] == want
    assert tokenizer.decode(tokenizer.encode("hello, genai")) == "hello, genai"


def test_a_folder_no_export_wrote_is_refused(tmp_path):
    from tonnx import OutputFileError
    from tonnx_transformers import export_llm

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(OutputFileError, match="no export wrote"):
        export_llm(tmp_path / "nowhere", tmp_path / "out")
    assert os.listdir(tmp_path / "out") == ["notes.txt"]


def test_an_unknown_precision_is_refused(tmp_path):
    from tonnx import UnsupportedError
    from tonnx_transformers import export_llm

    with pytest.raises(UnsupportedError, match="'int2'.*fp32, fp16, int8, int4"):
        export_llm(tmp_path, tmp_path / "out", precision="int2")
    assert not (tmp_path / "out").exists()


def test_a_float64_checkpoint_is_refused_for_fp32(tmp_path):
    from tonnx import UnsupportedError
    from tonnx_transformers import export_llm

    llm_folders.model("llama").to(torch.float64).save_pretrained(tmp_path / "src")
    with pytest.raises(UnsupportedError, match="F64"):
        export_llm(tmp_path / "src", tmp_path / "out")
    assert sorted(os.listdir(tmp_path)) == ["src"]


def test_bfloat16_weights_are_cast_one_tensor_at_a_time(tmp_path):
    """A bfloat16 checkpoint streams into the float32 model (exact: bfloat16 is a subset)."""
    from safetensors.torch import save_file
    from tonnx import OutputFileError
    from tonnx.pipeline.write._weights import SafetensorsWeights

    stored = torch.randn(4, 8).to(torch.bfloat16)
    save_file({"w": stored}, str(tmp_path / "w.safetensors"))
    like = torch.empty(4, 8, device="meta")
    got = SafetensorsWeights(str(tmp_path / "w.safetensors"), cast_floats=True).load("w", like)
    assert got.dtype == torch.float32 and torch.equal(got, stored.float())
    with pytest.raises(OutputFileError, match="bfloat16"):
        SafetensorsWeights(str(tmp_path / "w.safetensors")).load("w", like)


def test_a_bad_source_exits_2(tmp_path, capsys):
    assert main(["export-llm", str(tmp_path / "missing"), "-o", str(tmp_path / "out"), "-q"]) == 2
    assert "SourceError" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_a_previous_export_is_replaced_and_the_rest_kept(tmp_path):
    """The earlier export's files are replaced when the new ones are published, not before;
    a file of a name export-llm writes that this export did not write goes; the others stay."""
    from tonnx_transformers.llm.folder import StagingFolder, resolve_output

    out = tmp_path / "out"
    out.mkdir()
    (out / "genai_config.json").write_text("{}")
    (out / "vocab.json").write_text("{}")
    (out / "old.bin").write_text("mine")
    real = resolve_output(str(out))  # an earlier export's folder: accepted
    with StagingFolder(real) as staging:
        (tmp_path / staging.path / "genai_config.json").write_text('{"new": 1}')
        assert sorted(os.listdir(out)) == ["genai_config.json", "old.bin", "vocab.json"]  # untouched until published
        staging.publish()
    assert sorted(os.listdir(out)) == ["genai_config.json", "old.bin"]
    assert (out / "genai_config.json").read_text() == '{"new": 1}'
    assert os.listdir(tmp_path) == ["out"]


def test_a_failed_greedy_check_publishes_nothing(tmp_path, monkeypatch):
    """A folder whose tokens differ from transformers' is never written (here the reference is
    another model: the check must see it)."""
    from tonnx_transformers import GreedyCheckError, export_llm
    from tonnx_transformers.llm import export as export_module
    from tonnx_transformers.llm.source import load_source

    def other_reference(*args, **kwargs):
        src = load_source(*args, **kwargs)
        src.reference = lambda: llm_folders.model("llama", seed=1)
        return src

    monkeypatch.setattr(export_module, "load_source", other_reference)
    with pytest.raises(GreedyCheckError, match="differ from transformers"):
        export_llm(llm_folders.model("llama"), tmp_path / "out")
    assert os.listdir(tmp_path) == []


def test_the_command_belongs_to_the_pack():
    """``tonnx --help`` lists export-llm; with the pack blocked it is gone."""
    env = {**os.environ, "TONNX_PACKS": "no:transformers"}
    run = [sys.executable, "-m", "tonnx", "--help"]
    assert "export-llm" in subprocess.run(run, capture_output=True, text=True, check=True).stdout
    assert "export-llm" not in subprocess.run(run, capture_output=True, text=True, check=True, env=env).stdout


def test_a_pack_command_taking_a_core_name_is_refused(monkeypatch):
    import tonnx
    from tonnx.tools.cli import _pack_commands
    from tonnx.dispatch import _manager

    spec = tonnx.PackSpec(name="clash", load=list, commands=lambda sub: sub.add_parser("export"))
    monkeypatch.setattr(_manager.PackManager, "enabled_packs", lambda self, config: {"clash": spec})
    assert main(["packs"]) == 2  # the parser is built with every pack's commands
    with pytest.raises(tonnx.PackLoadError, match="'clash' adds a command whose name is taken"):
        from tonnx.cli import _parser

        _parser()


@pytest.mark.parametrize("name, alias", [
    ("gpt2", {"lm_head.weight": "transformer.wte.weight"}),  # tied, saved once
    ("gpt_neox", {"lm_head.weight": "embed_out.weight"}),  # renamed by transformers on load
    ("llama", {}),
])
def test_checkpoint_names_of_tied_and_renamed_weights(tmp_path, name, alias):
    from safetensors import safe_open
    from tonnx.pipeline.write._weights import SafetensorsWeights
    from tonnx_transformers.llm.source import checkpoint_names, parameters_on_meta

    real = llm_folders.save_folder(name, tmp_path)
    path = str(tmp_path / "model.safetensors")
    with safe_open(path, framework="pt") as f:
        stored = set(f.keys())  # noqa: SIM118
    with parameters_on_meta():
        meta = transformers.AutoModelForCausalLM.from_config(real.config)
    assert checkpoint_names(meta, stored) == alias
    weights = SafetensorsWeights(path, alias)
    for model_name in alias:
        got = weights.load(model_name, meta.state_dict()[model_name])
        torch.testing.assert_close(got, real.state_dict()[model_name], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["mixtral", "qwen3_moe"])
def test_experts_stacked_from_several_tensors_are_streamed(tmp_path, name):
    """Each stacked experts tensor is computed from its checkpoint tensors (one per expert)
    by transformers' converter as it is read: equal to what from_pretrained loads."""
    from tonnx.pipeline.write._weights import SafetensorsWeights
    from tonnx_transformers.llm.source import load_source

    llm_folders.save_folder(name, tmp_path)
    src = load_source(str(tmp_path), precision="fp32")
    loaded = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path)).state_dict()
    layers = src.config.num_hidden_layers
    assert src.weights and sorted(src.stacked) == sorted(
        f"model.layers.{i}.mlp.experts.{p}" for i in range(layers) for p in ("gate_up_proj", "down_proj"))
    weights = SafetensorsWeights(src.weights, src.aliases).with_derivations(src.stacked)
    state = src.model.state_dict()
    for target, derivation in src.stacked.items():
        assert len(derivation.sources) == (8 if target.endswith("gate_up_proj") else 4)  # 4 experts
        got = weights.load(target, state[target])
        np.testing.assert_array_equal(got, loaded[target].numpy(), err_msg=target)


def test_experts_of_a_sharded_checkpoint_are_stacked_across_files(tmp_path):
    """A layer's experts split over several safetensors files (10 shards of 60 kB)."""
    from tonnx_transformers import export_llm

    llm_folders.model("mixtral").save_pretrained(tmp_path / "src", max_shard_size="60KB")
    llm_folders.tokenizer().save_pretrained(tmp_path / "src")
    assert len(list((tmp_path / "src").glob("*.safetensors"))) > 2
    done = export_llm(tmp_path / "src", tmp_path / "out", precision="int4")
    assert done.streamed and done.check.max_abs_diff < 1e-5


@pytest.mark.parametrize(("name", "options"), [
    ("mixtral", {"runtime": "onnx"}), ("mixtral", {"precision": "fp16"}), ("gpt_oss", {"precision": "fp16"}),
])
def test_streamed_experts_no_fused_op_replaces_pass_the_check(tmp_path, name, options):
    """Where no onnxruntime MoE op replaces the experts (the portable flavor; float16), a
    streamed model traces transformers' loop over the experts: on 'meta', grouped_mm takes
    another branch than on the CPU (histc of ints) and the export failed (GPT-OSS, whose
    checkpoint holds its experts stacked, too)."""
    from tonnx_transformers import export_llm

    llm_folders.save_folder(name, tmp_path / "src")
    done = export_llm(tmp_path / "src", tmp_path / "out", **options)
    assert done.streamed and done.check.max_abs_diff < (1e-3 if options.get("precision") else 1e-5)


def test_a_callable_source_is_the_model_in_memory(tmp_path):
    from tonnx_transformers.llm.source import SourceError, load_source

    (tmp_path / "mymodels.py").write_text(
        "import transformers\n"
        "def tiny():\n"
        "    return transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(\n"
        "        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,\n"
        "        num_key_value_heads=2, vocab_size=256))\n"
        "def not_a_model():\n"
        "    return 3\n"
    )
    src = load_source(f"{tmp_path / 'mymodels.py'}:tiny", precision="fp32")
    assert src.weights == [] and src.reference() is src.model and src.tokenizer_folder is None
    assert not any(p.device.type == "meta" for p in src.model.parameters())
    with pytest.raises(SourceError, match="expected a transformers causal LM"):
        load_source(f"{tmp_path / 'mymodels.py'}:not_a_model", precision="fp32")


def test_a_latent_attention_cache_is_kept_in_halves_for_genai(tmp_path):
    """DeepSeek-V3 caches a one-head latent (15 wide) and rotary part (8); onnxruntime-genai
    has one head size: the folder's cache is the row's two halves of 12 (a zero appended).
    DeepSeek-V2 (16 + 8: no zero) is laid out alike. genai's tokens are transformers'."""
    import onnx

    from tonnx_transformers import export_llm

    og = _genai()
    for name, half in (("deepseek_v3", 12), ("deepseek_v2", 12)):
        model = llm_folders.save_folder(name, tmp_path / name)
        done = export_llm(tmp_path / name, tmp_path / f"{name}-onnx")
        assert done.streamed and done.check.max_abs_diff < 1e-5, name
        graph = onnx.load(tmp_path / f"{name}-onnx" / "model.onnx", load_external_data=False).graph
        past = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
                for i in graph.input if i.name.startswith("past_key_values.")]
        assert past == [["batch", 1, "past_sequence", half]] * 4, name
        got, want = llm_folders.genai_tokens(og, tmp_path / f"{name}-onnx", 20), llm_folders.transformers_tokens(model, 20)
        assert len(got) >= 8 and got == want, name


def test_more_architectures_give_genai_the_tokens_of_transformers(tmp_path):
    """StableLM (partial rotary), SmolLM3 (a layer without rotary), OLMoE (experts streamed),
    Gemma3 text (sliding window 8 < 26 positions), Qwen2-MoE (a shared expert), GPT-OSS
    (biased, transposed experts, attention sinks), EXAONE-MoE (a buffer saved under
    another name) and GPT-BigCode (multi-query: one cached head): the rows of
    docs/llm-export.md. One test, not one per model (one export each, weights of a few
    hundred kB)."""
    from tonnx_transformers import export_llm

    og = _genai()
    for name in ("stablelm", "smollm3", "olmoe", "gemma3_text", "qwen2_moe", "gpt_oss", "exaone_moe", "gpt_bigcode"):
        model = llm_folders.save_folder(name, tmp_path / name)
        done = export_llm(tmp_path / name, tmp_path / f"{name}-onnx")
        assert done.streamed and done.check.max_abs_diff < 5e-5, name  # SmolLM3: 6.1e-6
        got, want = llm_folders.genai_tokens(og, tmp_path / f"{name}-onnx", 20), llm_folders.transformers_tokens(model, 20)
        assert len(got) >= 8 and got == want, name


def test_a_model_without_a_position_limit_takes_the_context_length(tmp_path):
    """BLOOM (ALiBi) has no max_position_embeddings: refused before anything is written,
    naming --context-length; with it, the folder records it and generates transformers'
    tokens."""
    from tonnx import UnsupportedError
    from tonnx_transformers import export_llm

    og = _genai()
    torch.manual_seed(0)
    config = transformers.BloomConfig(hidden_size=64, n_layer=2, n_head=4, vocab_size=llm_folders.VOCAB,
                                      bos_token_id=1, eos_token_id=2)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    model.save_pretrained(tmp_path / "src")
    llm_folders.tokenizer().save_pretrained(tmp_path / "src")
    with pytest.raises(UnsupportedError, match="--context-length"):
        export_llm(tmp_path / "src", tmp_path / "out")
    assert sorted(os.listdir(tmp_path)) == ["src"]
    done = export_llm(tmp_path / "src", tmp_path / "out", context_length=128)
    assert done.check.max_abs_diff < 1e-5
    assert json.loads((tmp_path / "out" / "genai_config.json").read_text())["model"]["context_length"] == 128
    got, want = llm_folders.genai_tokens(og, tmp_path / "out", 20), llm_folders.transformers_tokens(model, 20)
    assert len(got) >= 8 and got == want


def test_a_trace_with_a_constant_on_meta_loads_the_model_in_memory(tmp_path):
    """Falcon picks its key and value with a list index (``qkv[..., [-2], :]``): traced on
    ``meta`` the index tensor holds no value, and streaming stopped on it. The model is then
    loaded in memory, and the folder generates transformers' tokens."""
    from tonnx_transformers import export_llm

    og = _genai()
    model = llm_folders.save_folder("falcon", tmp_path / "src")
    done = export_llm(tmp_path / "src", tmp_path / "out")
    assert not done.streamed and done.check.max_abs_diff < 1e-5
    got, want = llm_folders.genai_tokens(og, tmp_path / "out", 20), llm_folders.transformers_tokens(model, 20)
    assert len(got) >= 8 and got == want


def test_a_window_kept_by_the_cache_alone_is_refused(tmp_path):
    """Moshi crops its generation cache to the sliding window and masks without one: a graph
    keeping the whole cache would be wrong past the window (the check saw 0.08 at step 2
    with a window of 8). Refused before anything is written."""
    from tonnx import UnsupportedError
    from tonnx_transformers import export_llm

    torch.manual_seed(0)
    config = transformers.MoshiConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, head_dim=16, vocab_size=llm_folders.VOCAB,
                                      sliding_window=8, intermediate_size=128)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / "src")
    llm_folders.tokenizer().save_pretrained(tmp_path / "src")
    with pytest.raises(UnsupportedError, match="applies no window"):
        export_llm(tmp_path / "src", tmp_path / "out")
    assert sorted(os.listdir(tmp_path)) == ["src"]
