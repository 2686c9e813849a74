"""export-llm on a Qwen2.5-VL shape beside what a user does today (issue 34 item 2).

Builds a random Qwen2.5-VL folder (4 of Qwen2.5-VL-3B's 36 text layers at a 1024 hidden
size, vocab 32000; 4 vision blocks at the real vision width 1280), then, each in a child
process timed by ``/usr/bin/time`` (wall, user CPU, peak RSS):

- ``tonnx export-llm SRC -o OUT --precision int4``: vision + embedding + int4 decoder;
- ``python -m onnxruntime_genai.models.builder -m SRC -p int4 -e cpu``: the builder's
  folder, the text decoder only (``qwen2_5_vl_text``: no image can be given to it).

Then decode: greedy generation of --tokens tokens after a 16-token text prompt in
onnxruntime-genai, process CPU time per token (the first token, the prompt's, left out),
the two folders interleaved --rounds times; and tonnx's folder with a 224 x 224 image
(time to the first token: vision + embedding + prefill).

    python tests/bench/bench_export_llm_vision.py --work /tmp/vlm-bench
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "transformers_pack"))


def build(folder: str) -> None:
    import torch
    import transformers
    import vlm_folders

    ids = dict(bos_token_id=1, eos_token_id=2, pad_token_id=0)
    config = transformers.Qwen2_5_VLConfig(
        text_config=dict(hidden_size=1024, num_hidden_layers=4, num_attention_heads=16, num_key_value_heads=2,
                         intermediate_size=4864, vocab_size=32000, max_position_embeddings=4096,
                         rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 8, 8]},
                         **ids),
        vision_config=dict(depth=4, hidden_size=1280, num_heads=16, intermediate_size=3420, out_hidden_size=1024,
                           fullatt_block_indexes=[3]),
        image_token_id=vlm_folders.IMAGE, video_token_id=vlm_folders.VIDEO,
        vision_start_token_id=vlm_folders.START, vision_end_token_id=vlm_folders.END, **ids)
    torch.manual_seed(0)
    model = transformers.Qwen2_5_VLForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    vlm_folders.tokenizer().save_pretrained(folder)
    with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
        json.dump(vlm_folders.PREPROCESSOR, f)


def timed(args: list[str]) -> dict:
    """wall s, user s, peak RSS MB of ``args`` in a child process."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %U %M", *args], capture_output=True, text=True, check=True)
    wall, user, rss = out.stderr.strip().splitlines()[-1].split()
    return {"wall_s": float(wall), "user_s": float(user), "peak_rss_mb": int(rss) / 1024}


def decode_ms(folder: str, tokens: int, image: str | None = None) -> tuple[float, float]:
    """(process CPU ms per generated token after the first, CPU s to the first token)."""
    import numpy as np
    import onnxruntime_genai as og

    model = og.Model(folder)
    prompt = list(range(40, 56))
    params = og.GeneratorParams(model)
    generator_start = time.process_time()
    if image is not None:
        inputs = model.create_multimodal_processor()("<|vision_start|><|image_pad|><|vision_end|>Describe it",
                                                     images=og.Images.open(image))
        params.set_search_options(max_length=inputs["input_ids"].as_numpy().shape[1] + tokens, do_sample=False,
                                  min_length=0)
        generator = og.Generator(model, params)
        generator.set_inputs(inputs)
    else:
        params.set_search_options(max_length=len(prompt) + tokens, do_sample=False)
        generator = og.Generator(model, params)
        generator.append_tokens(np.array([prompt], dtype=np.int32))
    generator.generate_next_token()
    first = time.process_time() - generator_start
    start, n = time.process_time(), 0
    while not generator.is_done():
        generator.generate_next_token()
        n += 1
    return 1000 * (time.process_time() - start) / max(n, 1), first


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    src, ours, builder = (os.path.join(args.work, n) for n in ("src", "tonnx-int4", "builder-int4"))
    if not os.path.isdir(src):
        build(src)
    results = {}
    if not os.path.isdir(ours):
        results["tonnx export"] = timed(["tonnx", "export-llm", src, "-o", ours, "--precision", "int4", "-q"])
    if not os.path.isdir(builder):
        results["builder export"] = timed([sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", src,
                                           "-o", builder, "-p", "int4", "-e", "cpu",
                                           "-c", os.path.join(args.work, "cache")])
    import numpy as np
    import vlm_folders

    png = os.path.join(args.work, "image.png")
    from pathlib import Path

    vlm_folders.write_png(Path(png), vlm_folders.image(224, 224))
    decode = {"tonnx": [], "builder": []}
    for _ in range(args.rounds):
        decode["tonnx"].append(decode_ms(ours, args.tokens)[0])
        decode["builder"].append(decode_ms(builder, args.tokens)[0])
    results["decode ms/token (text prompt, median of rounds)"] = {
        k: {"median": statistics.median(v), "all": [round(x, 2) for x in v]} for k, v in decode.items()}
    image_ms, first = decode_ms(ours, args.tokens, png)
    results["tonnx with a 224x224 image"] = {"decode_ms_per_token": image_ms, "cpu_s_to_first_token": first}
    results["load"] = os.getloadavg()
    print(json.dumps(results, indent=2, default=float))
    del np


if __name__ == "__main__":
    main()
