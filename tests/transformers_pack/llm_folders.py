"""Tiny random causal LMs saved as transformers folders (config, safetensors, tokenizer).

2 layers, hidden 64, vocab 256: what ``tonnx export-llm`` reads. The tokenizer is a local
byte-level BPE, saved with ``PreTrainedTokenizerFast``.
"""

from __future__ import annotations

import numpy as np
import torch
import transformers

VOCAB = 256
COMMON = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              vocab_size=VOCAB, max_position_embeddings=256, intermediate_size=128,
              bos_token_id=1, eos_token_id=2)
MOE = dict(num_experts_per_tok=2)
LATENT = dict(moe_intermediate_size=32, n_routed_experts=4, n_shared_experts=1, n_group=1, topk_group=1,
              first_k_dense_replace=1, q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16)

CONFIGS = {
    "llama": lambda: transformers.LlamaConfig(**COMMON),
    "mistral": lambda: transformers.MistralConfig(**COMMON, sliding_window=8),
    "qwen2": lambda: transformers.Qwen2Config(**COMMON),
    "qwen3": lambda: transformers.Qwen3Config(**COMMON, head_dim=16),
    "phi3": lambda: transformers.Phi3Config(**COMMON, pad_token_id=0),
    "gemma2": lambda: transformers.Gemma2Config(**COMMON, head_dim=16, sliding_window=8),
    "gpt2": lambda: transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB,
                                           n_positions=256, bos_token_id=1, eos_token_id=2),
    # multi-query: one cached head whatever num_key_value_heads says
    "gpt_bigcode": lambda: transformers.GPTBigCodeConfig(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB,
                                                         n_positions=256, multi_query=True, bos_token_id=1,
                                                         eos_token_id=2),
    # multi-query, its key and value picked by a list index (a constant the trace makes)
    "falcon": lambda: transformers.FalconConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                vocab_size=VOCAB, max_position_embeddings=256, bos_token_id=1,
                                                eos_token_id=2),
    "gpt_neox": lambda: transformers.GPTNeoXConfig(**{k: v for k, v in COMMON.items() if k != "num_key_value_heads"}),
    "mixtral": lambda: transformers.MixtralConfig(**COMMON, **MOE, num_local_experts=4),
    "qwen3_moe": lambda: transformers.Qwen3MoeConfig(
        **COMMON, **MOE, moe_intermediate_size=32, num_experts=4, head_dim=16,
        decoder_sparse_step=1, mlp_only_layers=[]),
    "stablelm": lambda: transformers.StableLmConfig(**COMMON),  # partial rotary 0.25
    # layer 1 without rotary; its tied head repeats the last token at initializer_range 0.02
    "smollm3": lambda: transformers.SmolLM3Config(**COMMON, pad_token_id=0, no_rope_layers=[1, 0],
                                                  initializer_range=0.2),
    "olmoe": lambda: transformers.OlmoeConfig(**COMMON, **MOE, num_experts=4, pad_token_id=0),
    "qwen2_moe": lambda: transformers.Qwen2MoeConfig(  # a shared expert beside the routed ones
        **COMMON, **MOE, moe_intermediate_size=32, num_experts=4, shared_expert_intermediate_size=64,
        decoder_sparse_step=1, mlp_only_layers=[]),
    "gpt_oss": lambda: transformers.GptOssConfig(  # biased, transposed experts; sinks
        **COMMON, head_dim=16, num_local_experts=4, num_experts_per_tok=2, sliding_window=8,
        layer_types=["sliding_attention", "full_attention"]),
    # multi-head latent attention; 15 + 8 is odd: the cache's halves carry a zero (latent_cache.py)
    "deepseek_v3": lambda: transformers.DeepseekV3Config(**COMMON, **MOE, **LATENT, kv_lora_rank=15),
    "deepseek_v2": lambda: transformers.DeepseekV2Config(**COMMON, **MOE, **LATENT, kv_lora_rank=16),
    # its router's bias is saved under another name than the model's (a renamed buffer)
    "exaone_moe": lambda: transformers.ExaoneMoeConfig(
        **COMMON, **MOE, moe_intermediate_size=32, num_experts=4, sliding_window=8),
    "gemma3_text": lambda: transformers.Gemma3TextConfig(
        **COMMON, head_dim=16, sliding_window=8, layer_types=["sliding_attention", "full_attention"]),
}


def tokenizer():
    """Byte-level BPE over the 256 byte symbols, no merges (onnxruntime-genai's tokenizer
    reads BPE, not word-level ones); ids 1 and 2 are bos and eos."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE({s: i for i, s in enumerate(symbols)}, []))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=symbols[1], eos_token=symbols[2])


def model(name: str, seed: int = 0):
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(CONFIGS[name]()).eval()


def save_folder(name: str, folder, seed: int = 0):
    """Writes the model ``name`` and the tokenizer into ``folder``; returns the model."""
    m = model(name, seed)
    m.save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    return m


#: The prompt the greedy-token tests generate from. No id below 4: onnxruntime-genai masks a
#: prompt's tokens equal to the config's pad id (3 in some configs, e.g. Apertus), which
#: transformers' generate() with a mask of ones does not. (With 30 last, the tiny SmolLM3
#: reaches eos after 3 tokens; with 13 every folder here generates 20.)
PROMPT = [5, 17, 42, 7, 99, 13]


def genai_tokens(og, out, n: int) -> list[int]:
    """onnxruntime-genai's ``n`` greedy tokens after PROMPT from the folder ``out``."""
    genai_model = og.Model(str(out))
    params = og.GeneratorParams(genai_model)
    params.set_search_options(max_length=len(PROMPT) + n, do_sample=False)
    generator = og.Generator(genai_model, params)
    generator.append_tokens(np.array([PROMPT], dtype=np.int32))
    got = []
    while not generator.is_done():
        generator.generate_next_token()
        got.append(int(generator.get_next_tokens()[0]))
    return got


def transformers_tokens(model, n: int) -> list[int]:
    """transformers' ``generate(do_sample=False)`` after PROMPT, cut at eos as genai stops."""
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                             do_sample=False, pad_token_id=0)
    want = out[0, len(PROMPT):].tolist()
    eos = model.generation_config.eos_token_id
    return want[: want.index(eos) + 1] if eos in want else want


def fused_attention_with_cache() -> bool:
    """True when the installed packs and onnxruntime give a folder's attention as
    GroupQueryAttention with the cache (tonnx-ortcontrib, onnxruntime 1.32+): q/k/v are
    then one packed projection and rotary runs inside the op."""
    try:
        from tonnx_ortcontrib._target import resolve
    except ImportError:
        return False
    return resolve({}).gqa_with_cache
