"""Whisper folders of ``tonnx export-llm`` beside onnxruntime-genai's builder (issue 34 item 1).

    python tests/bench/bench_whisper.py                          # whisper-tiny shape, fp32 and int4
    python tests/bench/bench_whisper.py --shape test --rounds 1  # the tests' tiny model

A random Whisper of the chosen shape (``tiny``: OpenAI's whisper-tiny, 4 + 4 layers, d_model
384, vocab 51865, 39 M parameters) is saved with the tests' tokenizer and feature extractor
(whisper_folders.py). Each precision is exported by ``tonnx export-llm --no-verify`` and by
``python -m onnxruntime_genai.models.builder -p P -e cpu``, each in its own process under
``/usr/bin/time`` (wall time, peak RSS), in alternating order. For each folder:

- the encoder's run on one 30 s window (onnxruntime, CPU time of the process, median);
- onnxruntime-genai's decode: ``--tokens`` greedy tokens from seeded features after the
  decoder start token, the process CPU time per token after the first (median of rounds;
  the first token includes the encoder);
- the tokens against transformers' ``generate`` (fp32) on the same features.

CPU times are used because the machine is shared (report ``uptime``'s load beside them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "transformers_pack"))

SHAPES = {
    "test": {},
    "tiny": dict(vocab_size=51865, d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                 decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536, max_target_positions=448,
                 init_std=0.02),
}


def save(folder: str, shape: str) -> None:
    import whisper_folders

    whisper_folders.save_folder(folder, **SHAPES[shape])


def timed(command: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds (user + system), peak RSS MiB) of ``command`` in its own process."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *command], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{out.stderr[-3000:]}")
    wall, user, system, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), float(rss) / 1024


_RUN = r"""
import json, sys, time
import numpy as np, onnxruntime as ort, onnxruntime_genai as og
sys.path.insert(0, sys.argv[3])
import whisper_folders
folder, n = sys.argv[1], int(sys.argv[2])
config = json.load(open(folder + "/genai_config.json"))["model"]
mels = ort.InferenceSession(folder + "/encoder.onnx").get_inputs()[0].shape[1]
features = np.random.default_rng(1).standard_normal((1, mels, 3000)).astype(np.float32)
session = ort.InferenceSession(folder + "/encoder.onnx", providers=["CPUExecutionProvider"])
session.run(None, {"audio_features": features})
encoder = []
for _ in range(3):
    t = time.process_time(); session.run(None, {"audio_features": features}); encoder.append(time.process_time() - t)
model = og.Model(folder)
params = og.GeneratorParams(model)
params.set_search_options(do_sample=False, max_length=1 + n, min_length=1 + n)
generator = og.Generator(model, params)
inputs = og.NamedTensors(); inputs["audio_features"] = features
generator.set_inputs(inputs)
generator.append_tokens(np.array([[whisper_folders.START]], dtype=np.int32))
steps, tokens = [], []
while not generator.is_done():
    t = time.process_time(); generator.generate_next_token(); steps.append(time.process_time() - t)
    tokens.append(int(generator.get_next_tokens()[0]))
print(json.dumps({"encoder_ms": 1000 * sorted(encoder)[1], "decode_ms": 1000 * sorted(steps[1:])[len(steps[1:]) // 2],
                  "first_ms": 1000 * steps[0], "tokens": tokens}))
"""


def decode(folder: str, tokens: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _RUN, folder, str(tokens), os.path.join(HERE, "..", "transformers_pack")],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def reference_tokens(source: str, tokens: int) -> list[int]:
    import numpy as np
    import transformers
    import whisper_folders

    model = transformers.WhisperForConditionalGeneration.from_pretrained(source).eval()
    features = np.random.default_rng(1).standard_normal((1, model.config.num_mel_bins, 3000)).astype(np.float32)
    return whisper_folders.transformers_tokens(model, features, tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="tiny", choices=sorted(SHAPES))
    parser.add_argument("--precisions", nargs="+", default=["fp32", "int4"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep the folders")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="bench-whisper-")
    source = os.path.join(work, f"whisper-{args.shape}")
    if not os.path.isdir(source):
        save(source, args.shape)
    want = reference_tokens(source, args.tokens)
    rows: dict[tuple[str, str], dict] = {}
    for round_ in range(args.rounds):
        for precision in args.precisions:
            tools = [("tonnx", [sys.executable, "-m", "tonnx", "export-llm", source, "-o", "{out}", "--no-verify", "-q",
                                "--precision", precision]),
                     ("builder", [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", source,
                                  "-o", "{out}", "-p", precision, "-e", "cpu"])]
            for tool, command in (tools if round_ % 2 == 0 else tools[::-1]):
                out = os.path.join(work, f"{tool}-{precision}-{round_}")
                wall, cpu, rss = timed([c.replace("{out}", out) for c in command])
                got = decode(out, args.tokens)
                row = rows.setdefault((tool, precision), {"wall": [], "cpu": [], "rss": [], "encoder_ms": [], "decode_ms": []})
                for key, value in (("wall", wall), ("cpu", cpu), ("rss", rss), ("encoder_ms", got["encoder_ms"]),
                                   ("decode_ms", got["decode_ms"])):
                    row[key].append(value)
                row["equal"] = sum(a == b for a, b in zip(got["tokens"], want))
                print(f"round {round_} {tool} {precision}: export {wall:.1f} s (CPU {cpu:.1f} s), peak RSS {rss:.0f} MiB, "
                      f"encoder {got['encoder_ms']:.1f} ms, decode {got['decode_ms']:.2f} ms/token, "
                      f"tokens equal to transformers fp32 {row['equal']}/{len(want)}  (load {os.getloadavg()[0]:.1f})",
                      flush=True)
    print("\n| folder | export wall s | export CPU s | peak RSS MiB | encoder ms (CPU) | decode ms/token (CPU) | tokens = transformers fp32 |")
    print("|---|---|---|---|---|---|---|")
    for (tool, precision), row in rows.items():
        med = {k: sorted(v)[len(v) // 2] for k, v in row.items() if isinstance(v, list)}
        print(f"| {tool} {precision} | {', '.join(f'{w:.1f}' for w in row['wall'])} | "
              f"{', '.join(f'{c:.1f}' for c in row['cpu'])} | {med['rss']:.0f} | "
              f"{med['encoder_ms']:.1f} | {med['decode_ms']:.2f} | {row['equal']}/{len(want)} |")


if __name__ == "__main__":
    main()
