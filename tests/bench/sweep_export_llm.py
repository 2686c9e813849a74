"""``export_llm`` over every causal LM of transformers, tiny random configs (issue 18).

For each model type of ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``: its config class with the sizes
shrunk (hidden 64, 2 layers, vocab 256, ... where the config has them), random weights saved
as a folder with a byte-level tokenizer, then ``export_llm(folder, out)`` with the greedy
check, and onnxruntime-genai's 20 greedy tokens against transformers'. Each model runs in its
own process (a timeout, a crash or a leak stays there). Prints one line per model and a
count per outcome:

- ``ok``: the check passed and genai's tokens equal transformers';
- ``tokens``: the check passed, genai's tokens differ (a wrong folder: the worst outcome);
- ``check``: ``GreedyCheckError``, the folder was not written (a wrong graph, caught);
- ``refused``: another typed tonnx error (names what is unsupported);
- ``error``: any other exception during the export (an untyped failure: a bug to fix);
- ``config``: the tiny model could not be built or run by transformers itself (not tonnx's).

    python tests/bench/sweep_export_llm.py [--only llama mixtral ...] [--jobs 2] [--timeout 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = dict(
    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
    vocab_size=256, max_position_embeddings=256, head_dim=16, moe_intermediate_size=32, num_experts=4,
    num_local_experts=4, n_routed_experts=4, num_experts_per_tok=2, shared_expert_intermediate_size=64,
    n_embd=64, n_layer=2, n_head=4, n_positions=256, d_model=64, num_layers=2, num_heads=4, ffn_dim=128,
    sliding_window=8, bos_token_id=1, eos_token_id=2,
)  # fmt: skip
#: a tiny model has fewer parameters than this; a config the sizes do not reach is skipped
MAX_PARAMETERS = 5_000_000


def tiny_config(model_type: str):
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    defaults = cls().to_dict()
    return cls(**{k: v for k, v in SIZES.items() if k in defaults})


def one(model_type: str) -> dict:
    """Runs one model in this process; the outcome as a dict."""
    import numpy as np
    import torch
    import transformers

    sys.path.insert(0, os.path.join(HERE, "..", "transformers_pack"))
    import llm_folders

    from tonnx import TonnxError
    from tonnx_transformers import export_llm
    from tonnx_transformers.llm.verify import GreedyCheckError

    work = tempfile.mkdtemp(prefix=f"sweep-{model_type}-")
    try:
        torch.manual_seed(0)
        config = tiny_config(model_type)
        with torch.device("meta"):
            size = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(config).parameters())
        if size > MAX_PARAMETERS:
            return {"outcome": "config", "why": f"{size / 1e6:.0f} M parameters after shrinking"}
        model = transformers.AutoModelForCausalLM.from_config(config).eval()
        with torch.no_grad():
            model(input_ids=torch.tensor([llm_folders.PROMPT]))
        model.save_pretrained(f"{work}/src")
        llm_folders.tokenizer().save_pretrained(f"{work}/src")
    except Exception as e:  # transformers' own failure on the tiny config
        return {"outcome": "config", "why": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
    start = time.perf_counter()
    try:
        done = export_llm(f"{work}/src", f"{work}/out")
    except GreedyCheckError as e:
        return {"outcome": "check", "why": str(e)[:300]}
    except TonnxError as e:
        return {"outcome": "refused", "why": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
    except Exception as e:
        return {"outcome": "error", "why": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
    seconds = time.perf_counter() - start
    import onnxruntime_genai as og

    got, want = llm_folders.genai_tokens(og, f"{work}/out", 20), llm_folders.transformers_tokens(model, 20)
    outcome = "ok" if got == want else "tokens"
    return {"outcome": outcome, "why": f"check {done.check.max_abs_diff:.1e}, {seconds:.0f} s, "
            f"streamed={done.streamed}, {len(got)} tokens", "diff": float(np.float32(done.check.max_abs_diff))}


def _run(model_type: str, timeout: float) -> dict:
    try:
        proc = subprocess.run([sys.executable, __file__, "--one", model_type], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"outcome": "error", "why": f"timeout after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"outcome": "error", "why": f"process exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"}
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="these model types only")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)), flush=True)
        return
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    types = args.only or sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    counts: dict[str, int] = {}
    with ThreadPoolExecutor(args.jobs) as pool:
        for model_type, result in zip(types, pool.map(lambda t: _run(t, args.timeout), types)):
            counts[result["outcome"]] = counts.get(result["outcome"], 0) + 1
            print(f"{model_type:28s} {result['outcome']:8s} {result['why']}", flush=True)
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())), f"of {len(types)}")


if __name__ == "__main__":
    main()
