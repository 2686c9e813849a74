"""``tonnx export-llm SOURCE -o OUT``: the command this pack adds to ``tonnx`` (PackSpec.commands)."""

from __future__ import annotations

import argparse
import sys

EPILOG = """\
SOURCE: a transformers model folder (config.json, *.safetensors, tokenizer files) or
MODULE_OR_FILE:CALLABLE returning a causal LM (called with no arguments).

OUT receives model.onnx, model.onnx.data, genai_config.json and the tokenizer files:
onnxruntime_genai.Model(OUT) runs it. It is written beside OUT and renamed once checked.

Exit codes: 0 written, 1 failed, 2 bad usage or source, 3 ops without a converter,
4 torch.export failed, 5 the greedy check failed (nothing written).

Example: tonnx export-llm ./my-llama -o ./my-llama-onnx
"""


def add_commands(sub) -> None:
    p = sub.add_parser(
        "export-llm", help="export a transformers causal LM to an onnxruntime-genai folder",
        description="Export a causal LM with its KV cache to a folder onnxruntime-genai runs.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("source", metavar="SOURCE", help="model folder or MODULE_OR_FILE:CALLABLE")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the folder to write")
    p.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16", "int8", "int4"],
                   help="fp32; fp16 (the graph in float16); int8 or int4 (linear layers as "
                        "com.microsoft.MatMulNBits, weight-only, quantized while written); bf16 "
                        "is refused: onnxruntime's CPU EP lacks its kernels")
    p.add_argument("--block-size", type=int, metavar="N",
                   help="int8/int4 quantization block along the input dimension: 16, 32 "
                        "(default), 64, 128 or 256")
    p.add_argument("--tokenizer", metavar="DIR", help="copy the tokenizer files from DIR "
                   "(default: the source folder)")
    p.add_argument("--no-verify", action="store_true",
                   help="skip the greedy check against transformers (it loads the model in "
                        "memory once: skip it for a model larger than memory)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line, no summary")
    p.add_argument("--runtime", default="onnxruntime", choices=["onnxruntime", "onnx"],
                   help="onnxruntime (default: its com.microsoft fused ops when the ortcontrib "
                        "pack is installed) or onnx: standard domain only, opset 23")
    p.add_argument("--context-length", type=int, metavar="N",
                   help="the longest sequence the folder runs (default: the config's "
                        "max_position_embeddings; needed when the config has none, e.g. BLOOM)")
    p.set_defaults(run=run)


def run(args) -> int:
    from tonnx import TonnxError
    from tonnx.tools.cli import _codes

    from .export import export_llm
    from .source import SourceError
    from .verify import GreedyCheckError

    try:
        result = export_llm(args.source, args.output, precision=args.precision,
                            block_size=args.block_size, verify=not args.no_verify, tokenizer=args.tokenizer,
                            progress=False if args.quiet else None, runtime=args.runtime,
                            context_length=args.context_length)
    except SourceError as e:
        print(f"tonnx export-llm: {type(e).__name__}: {e}", file=sys.stderr)
        return _codes.USAGE
    except GreedyCheckError as e:
        print(f"tonnx export-llm: {type(e).__name__}: {e}", file=sys.stderr)
        return _codes.VERIFY_FAILED
    except TonnxError as e:
        print(f"tonnx export-llm: {type(e).__name__}: {e}", file=sys.stderr)
        return _codes.of_error(e)
    if not args.quiet:
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in result.seconds.items())
        how = "streamed from safetensors" if result.streamed else "loaded in memory by transformers"
        print(f"wrote {result.out}: {', '.join(result.files)}; weights {how} ({phases})")
        if result.check is not None:
            print(result.check.line())
    return _codes.OK
