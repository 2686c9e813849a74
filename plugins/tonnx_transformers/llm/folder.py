"""The output folder, published whole or not at all.

Everything is written into a temporary folder beside OUT (``.OUT.tmp-tonnx-<pid>-<hex>``),
checked, then renamed to OUT. A folder OUT of a previous export (it holds a
``genai_config.json``) is replaced: it is renamed aside, the new one renamed in, the old one
removed, so OUT is always either the old folder or the new one. Any other non-empty OUT is
refused before the export starts. A killed export leaves only its hidden temporary folder,
which the next export to the same OUT removes when its process is gone.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil

from tonnx import OutputFileError

#: files of a transformers folder that the tokenizer (and onnxruntime-genai's) reads
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "tokenizer.model", "vocab.json", "merges.txt", "vocab.txt", "chat_template.jinja",
    "chat_template.json",
)


def check_output(out: str) -> None:
    """Refuses an OUT that is a file, or a non-empty folder no export wrote."""
    if os.path.isfile(out) or (os.path.lexists(out) and not os.path.isdir(out)):
        raise OutputFileError(f"-o {out!r} exists and is not a folder: give a folder path.")
    if os.path.isdir(out) and os.listdir(out) and not os.path.isfile(os.path.join(out, "genai_config.json")):
        raise OutputFileError(
            f"-o {out!r} is a non-empty folder that no export wrote (no genai_config.json): "
            f"export-llm replaces only its own folders. Give a new or empty folder."
        )
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise OutputFileError(f"-o {out!r}: the folder {parent!r} does not exist.")


class StagingFolder:
    """``with StagingFolder(out) as staging:`` write into ``staging.path``; ``staging.publish()``
    renames it to OUT; leaving the block without publishing removes it."""

    def __init__(self, out: str):
        self.out = os.path.abspath(out)
        parent, name = os.path.split(self.out)
        self._prefix = os.path.join(parent, f".{name}.tmp-tonnx-")
        self.path = f"{self._prefix}{os.getpid()}-{secrets.token_hex(4)}"

    def __enter__(self) -> StagingFolder:
        _remove_stale(self._prefix)
        os.mkdir(self.path)
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.path, ignore_errors=True)  # gone already once published

    def publish(self) -> None:
        if os.path.isdir(self.out) and os.listdir(self.out):
            old = f"{self._prefix}{os.getpid()}-old-{secrets.token_hex(4)}"
            os.rename(self.out, old)
            os.rename(self.path, self.out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            if os.path.isdir(self.out):
                os.rmdir(self.out)
            os.rename(self.path, self.out)


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


def _remove_stale(prefix: str) -> None:
    """Temporary folders of killed exports to the same OUT (their process is gone)."""
    for path in glob.glob(glob.escape(prefix) + "*"):
        pid = os.path.basename(path)[len(os.path.basename(prefix)):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
