"""The output folder: OUT resolved before anything is decided, the user's files kept.

OUT is resolved first (``os.path.realpath``): a symlink to a folder is written through, as
``to_onnx`` writes through a symlink to a file; an empty path is refused (it would be the
current folder); so is OUT when it is SOURCE or the ``--tokenizer`` folder, a file, or a
non-empty folder no export wrote (the error names what it holds).

Everything is written into a temporary folder beside OUT, ``.tonnx-tmp-<pid>-<hex>`` (a
short name, so that OUT's own name may take the 255 bytes a file name has), checked, then
published:

- a new OUT: the temporary folder is renamed to OUT (one rename);
- an existing OUT (empty, or an earlier export's: it holds ``genai_config.json``): each
  file is moved in with ``os.replace``, ``model.onnx`` and ``genai_config.json`` last, with
  SIGINT and SIGTERM held during these renames; then the earlier export's files of a name
  export-llm writes (:data:`WRITTEN`) that this export did not write are removed. Every
  other file and folder of OUT (a ``notes.txt``, a subfolder, the source checkpoint) is the
  user's and stays.

A killed export leaves only its temporary folder; the next export beside the same OUT
removes it once its process is gone (``tonnx export-llm`` removes it on SIGTERM too).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import secrets
import shutil
import signal
from collections.abc import Iterable, Iterator

from tonnx import OutputFileError

#: files of a transformers folder that the tokenizer (and onnxruntime-genai's) reads
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "tokenizer.model", "vocab.json", "merges.txt", "vocab.txt", "chat_template.jinja",
    "chat_template.json",
)
#: the graphs of the folders export-llm writes: a text model's (model.onnx), a vision-language
#: model's (and vision.onnx, embedding.onnx), Whisper's (encoder.onnx, decoder.onnx)
GRAPHS = ("vision.onnx", "embedding.onnx", "encoder.onnx", "decoder.onnx", "model.onnx")
#: the processor configurations onnxruntime-genai reads beside them
PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json", "audio_processor_config.json",
                   "normalizer.json")
#: every name export-llm writes in OUT, in the order they are published (each graph's data
#: before the graph, genai_config.json, the mark of an export, last)
WRITTEN = (*TOKENIZER_FILES, *PROCESSOR_FILES, *(name for graph in GRAPHS for name in (f"{graph}.data", graph)),
           "genai_config.json")

#: the temporary folder's name: ``.tonnx-tmp-<pid>-<8 hex>``
_STAGING = re.compile(r"\.tonnx-tmp-(\d+)-[0-9a-f]{8}")
#: earlier versions named it after OUT (``.OUT.tmp-tonnx-<pid>-...``): swept too
_LEGACY = re.compile(r"\.(.+)\.tmp-tonnx-(\d+)-.*")


class OutputFolderError(OutputFileError):
    """OUT cannot be written as given (empty, a file, the source, a folder holding someone
    else's files, a name too long): a usage error, exit code 2. Nothing was written."""


def resolve_output(out: str, *, sources: Iterable[str | None] = ()) -> str:
    """OUT's real path, or an :class:`OutputFolderError` saying why it cannot be written.

    ``sources``: the folders read (SOURCE, ``--tokenizer``), which OUT must not be.
    """
    if out == "":
        raise OutputFolderError(
            "-o '': an empty path is not a folder (it would be the current folder). Give the "
            "folder to write, e.g. -o ./my-model-onnx."
        )
    real = os.path.realpath(out)
    parent, name = os.path.split(real)
    if not name:
        raise OutputFolderError(f"-o {out!r} is the root folder: give a folder to write.")
    if os.path.exists(real) and not os.path.isdir(real):
        raise OutputFolderError(f"-o {out!r} ({real!r}) exists and is not a folder: give a folder path.")
    if not os.path.isdir(parent):
        raise OutputFolderError(f"-o {out!r}: the folder {parent!r} does not exist.")
    limit = _name_max(parent)
    if len(os.fsencode(name)) > limit:
        raise OutputFolderError(
            f"-o {out!r}: its name is {len(os.fsencode(name))} bytes; a file name holds at most "
            f"{limit} bytes on this filesystem. Give a shorter name."
        )
    for source in sources:
        if source is not None and os.path.isdir(source) and os.path.realpath(source) == real:
            raise OutputFolderError(
                f"-o {out!r} is the folder the model or tokenizer is read from ({source!r}): "
                f"export-llm would write its files among the source's. Give another folder."
            )
    check_not_foreign(real, out)
    return real


def check_not_foreign(real: str, shown: str) -> None:
    """Refuses a non-empty folder that holds no ``genai_config.json`` (no export wrote it)."""
    if not os.path.isdir(real):
        return
    entries = sorted(e for e in os.listdir(real) if not _STAGING.fullmatch(e))
    if entries and "genai_config.json" not in entries:
        listed = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
        raise OutputFolderError(
            f"-o {shown!r} is a non-empty folder that no export wrote (no genai_config.json; "
            f"it holds {listed}): export-llm writes into a new or empty folder, or an earlier "
            f"export's. Give another folder."
        )


def _name_max(folder: str) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


class StagingFolder:
    """``with StagingFolder(out) as staging:`` write into ``staging.path``; ``staging.publish()``
    moves its files into OUT (``out``: resolved by :func:`resolve_output`); leaving the
    block without publishing removes it."""

    def __init__(self, out: str):
        self.out = os.path.realpath(out)
        self.parent = os.path.dirname(self.out)
        self.path = os.path.join(self.parent, f".tonnx-tmp-{os.getpid()}-{secrets.token_hex(4)}")

    def __enter__(self) -> StagingFolder:
        _remove_stale(self.parent, os.path.basename(self.out))
        try:
            os.mkdir(self.path)
        except OSError as e:
            raise OutputFolderError(
                f"cannot create the temporary folder {self.path!r} beside -o ({e.strerror}): "
                f"export-llm writes there first. Make {self.parent!r} writable or give another OUT."
            ) from e
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.path, ignore_errors=True)  # gone already once published

    def publish(self) -> None:
        with _signals_held():
            if not os.path.isdir(self.out):
                os.rename(self.path, self.out)
                return
            check_not_foreign(self.out, self.out)  # someone may have written there meanwhile
            new = set(os.listdir(self.path))
            _check_free(self.out, new)
            order = {name: i for i, name in enumerate(WRITTEN)}
            for name in sorted(new, key=lambda n: order.get(n, -1)):
                os.replace(os.path.join(self.path, name), os.path.join(self.out, name))
            for name in WRITTEN:
                old = os.path.join(self.out, name)
                if name not in new and os.path.isfile(old) and not os.path.islink(old):
                    os.remove(old)  # the earlier export's, not written this time
            os.rmdir(self.path)


def _check_free(out: str, names: set[str]) -> None:
    """A folder or symlink of OUT under a name export-llm writes is the user's: refused."""
    taken = sorted(n for n in names if os.path.lexists(p := os.path.join(out, n))
                   and (os.path.islink(p) or not os.path.isfile(p)))
    if taken:
        raise OutputFolderError(
            f"-o {out!r} holds {', '.join(taken)}, which export-llm writes, as a folder or a "
            f"symlink: it is not an export's file. Move it or give another folder."
        )


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the files are moved (delivered on leaving)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def copy_tokenizer(folder: str | None, into: str) -> list[str]:
    """Copies the tokenizer files found in ``folder``; returns their names."""
    if folder is None:
        return []
    copied = []
    for name in TOKENIZER_FILES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            shutil.copyfile(path, os.path.join(into, name))
            copied.append(name)
    return copied


def _remove_stale(parent: str, name: str) -> None:
    """Temporary folders of killed exports beside OUT (their process is gone)."""
    for path in glob.glob(os.path.join(glob.escape(parent), ".*tmp*")):
        entry = os.path.basename(path)
        staging, legacy = _STAGING.fullmatch(entry), _LEGACY.fullmatch(entry)
        if staging:
            pid = staging.group(1)
        elif legacy and legacy.group(1) == name:
            pid = legacy.group(2)
        else:
            continue
        if _alive(int(pid)):
            continue
        if os.path.islink(path):
            os.unlink(path)
        else:
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
