"""``tonnx export-llm SOURCE -o OUT``: the command this pack adds to ``tonnx`` (PackSpec.commands)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator

EPILOG = """\
SOURCE: a transformers model folder (config.json, *.safetensors, tokenizer files) or
MODULE_OR_FILE:CALLABLE returning a causal LM (called with no arguments).

OUT receives model.onnx, model.onnx.data, genai_config.json and the tokenizer files:
onnxruntime_genai.Model(OUT) runs it. It is written beside OUT and moved in once checked;
the other files of OUT stay. OUT is a new folder, an empty one or an earlier export's.
A vision-language folder (model_type qwen2_5_vl or mistral3) also gets vision.onnx,
embedding.onnx and processor_config.json: onnxruntime-genai's multimodal processor runs it
with images (docs/llm-export.md).

Exit codes: 0 written, 1 failed, 2 bad usage, source or OUT, 3 ops without a converter,
4 torch.export failed, 5 the greedy check failed (nothing written), 143 SIGTERM (nothing
written, the temporary folder removed).

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
                   "(default: the source folder); it must load in onnxruntime-genai")
    p.add_argument("--no-tokenizer", action="store_true",
                   help="write no tokenizer files (the folder then runs on token ids)")
    p.add_argument("--no-verify", action="store_true",
                   help="skip the greedy check against transformers (it loads the model in "
                        "memory once: skip it for a model larger than memory)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress line, no summary, no transformers progress bars or messages")
    p.add_argument("--runtime", default="onnxruntime", choices=["onnxruntime", "onnx"],
                   help="onnxruntime (default: its com.microsoft fused ops when the ortcontrib "
                        "pack is installed) or onnx: standard domain only, opset 23")
    p.add_argument("--context-length", type=int, metavar="N",
                   help="the longest sequence the folder runs (default: the config's "
                        "max_position_embeddings; needed when the config has none, e.g. BLOOM)")
    p.set_defaults(run=run)


def run(args) -> int:
    import warnings

    from tonnx import TonnxError
    from tonnx.toolkit import Terminated, exit_codes, sigterm_raises

    from .export import export_llm
    from .folder import OutputFolderError
    from .source import SourceError
    from .tokenizer_check import NoTokenizerWarning
    from .verify import GreedyCheckError

    if args.no_tokenizer and args.tokenizer:
        print("tonnx export-llm: give --tokenizer DIR or --no-tokenizer, not both.", file=sys.stderr)
        return exit_codes.USAGE
    try:
        with sigterm_raises(resignal=False), _quiet(args.quiet), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", NoTokenizerWarning)
            try:
                result = export_llm(
                    args.source, args.output, precision=args.precision, block_size=args.block_size,
                    verify=not args.no_verify, tokenizer=False if args.no_tokenizer else args.tokenizer,
                    progress=False if args.quiet else None, runtime=args.runtime,
                    context_length=args.context_length)
            finally:
                _print_warnings(said, quiet=args.quiet)
    except Terminated:
        print("tonnx export-llm: terminated (SIGTERM): nothing written, the temporary folder "
              "removed.", file=sys.stderr)
        return 128 + signal.SIGTERM
    except (SourceError, OutputFolderError) as e:
        print(f"tonnx export-llm: {type(e).__name__}: {e}", file=sys.stderr)
        return exit_codes.USAGE
    except GreedyCheckError as e:
        print(f"tonnx export-llm: {type(e).__name__}: {e}", file=sys.stderr)
        return exit_codes.VERIFY_FAILED
    except TonnxError as e:
        print(f"tonnx export-llm: {type(e).__name__}: {e}", file=sys.stderr)
        return exit_codes.of_error(e)
    if not args.quiet:
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in result.seconds.items())
        how = "streamed from safetensors" if result.streamed else "loaded in memory by transformers"
        print(f"wrote {result.out}: {', '.join(result.files)}; weights {how} ({phases})")
        if result.trace:
            print(f"trace: {result.trace}")
        if result.check is not None:
            print(result.check.line())
    return exit_codes.OK


@contextlib.contextmanager
def _quiet(quiet: bool) -> Iterator[None]:
    """``-q``: transformers' progress bars ("Loading weights") and messages are off within,
    and the warnings logged by the libraries it imports while loading (torchao's "Failed to
    load", torch's pytree notices); errors still show."""
    if not quiet:
        yield
        return
    import logging

    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    disabled = logging.root.manager.disable
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(disabled)
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _print_warnings(said: list, *, quiet: bool) -> None:
    """export-llm's warnings (no tokenizer) one line each, even with ``-q``; the libraries'
    as Python shows them, unless ``-q``."""
    import warnings

    from .tokenizer_check import NoTokenizerWarning

    for w in said:
        if issubclass(w.category, NoTokenizerWarning):
            print(f"tonnx export-llm: warning: {w.message}", file=sys.stderr)
        elif not quiet:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
