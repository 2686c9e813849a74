"""The folder's tokenizer, checked before it is published: onnxruntime-genai must read it.

onnxruntime-genai reads the tokenizer files with its own parser, which knows fewer kinds
than transformers (a WordLevel ``tokenizer.json`` stops it with ``Cannot know how to parse
line``). The copied files are loaded with ``og.Tokenizer`` from the staging folder (its
``genai_config.json``; the model is not loaded) and must give back a sample string they
encode; otherwise the export stops with :class:`TokenizerError` (exit code 2), naming
``--tokenizer DIR`` and ``--no-tokenizer``. A source without tokenizer files gives a folder
that runs on token ids only: :class:`NoTokenizerWarning` says so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from .folder import TOKENIZER_FILES
from .source import SourceError

#: encoded and decoded by the folder's tokenizer before publishing
SAMPLE = "Hello, world! 123"

#: run by a child python: FOLDER and the sample in argv, the decoded sample on stdout (JSON)
_ROUND_TRIP = (
    "import json, sys\n"
    "import onnxruntime_genai as og\n"
    "tokenizer = og.Tokenizer(og.Config(sys.argv[1]))\n"
    "print(json.dumps(tokenizer.decode(tokenizer.encode(sys.argv[2]))))\n"
)


class TokenizerError(SourceError):
    """The tokenizer files cannot be used by onnxruntime-genai (exit code 2; nothing written)."""


class NoTokenizerWarning(UserWarning):
    """The folder is written without tokenizer files: onnxruntime-genai runs it on token ids."""


def check_tokenizer_option(tokenizer: str | bool | None) -> str | bool | None:
    """``--tokenizer DIR`` must be a folder holding tokenizer files (False: none wanted)."""
    if tokenizer is None or tokenizer is False:
        return tokenizer
    tokenizer = os.fspath(tokenizer)
    if not os.path.isdir(tokenizer):
        raise TokenizerError(f"--tokenizer {tokenizer!r} is not a folder: give the folder holding "
                             f"tokenizer.json (or tokenizer.model), or --no-tokenizer.")
    if not any(os.path.isfile(os.path.join(tokenizer, name)) for name in TOKENIZER_FILES):
        raise TokenizerError(f"--tokenizer {tokenizer!r} holds none of {', '.join(TOKENIZER_FILES)}: "
                             f"give the folder save_pretrained wrote the tokenizer to.")
    return tokenizer


def check_genai_tokenizer(folder: str, copied: list[str], source: str | None) -> None:
    """``folder`` (with its genai_config.json) loads in onnxruntime-genai and round-trips SAMPLE."""
    import warnings

    if not copied:
        warnings.warn(NoTokenizerWarning(
            f"no tokenizer files in {source or 'the source'!r}: the folder is written without "
            f"a tokenizer (onnxruntime-genai runs it on token ids; og.Tokenizer fails). Give "
            f"--tokenizer DIR to add one, or --no-tokenizer to say none is wanted."), stacklevel=3)
        return
    if importlib.util.find_spec("onnxruntime_genai") is None:
        warnings.warn(NoTokenizerWarning(
            "onnxruntime-genai is not installed: the copied tokenizer files were not checked "
            "(pip install onnxruntime-genai to check them)."), stacklevel=3)
        return
    fix = ("Give --tokenizer DIR with a tokenizer onnxruntime-genai reads (BPE, SentencePiece), "
           "or --no-tokenizer.")
    # in a child process: onnxruntime-genai's parser can crash on files it does not know (a
    # WordLevel tokenizer.json ended a CI run's test process with a segmentation fault)
    child = subprocess.run([sys.executable, "-c", _ROUND_TRIP, folder, SAMPLE],
                           capture_output=True, text=True, check=False)
    if child.returncode != 0:
        reason = (child.stderr.strip().splitlines() or [f"exit code {child.returncode}"])[-1]
        raise TokenizerError(
            f"the tokenizer files of {source!r} ({', '.join(copied)}) do not load in "
            f"onnxruntime-genai: {reason}. {fix}")
    back = json.loads(child.stdout)
    if back.strip() != SAMPLE:
        raise TokenizerError(
            f"the tokenizer of {source!r} in onnxruntime-genai encodes {SAMPLE!r} and decodes "
            f"{back!r}. {fix}")
