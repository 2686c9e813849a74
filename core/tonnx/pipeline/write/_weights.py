"""Weights of a model built on the ``meta`` device, read from safetensors one tensor at a time.

A model bigger than memory is built on ``meta`` (``with torch.device("meta"): ...``), traced
by torch.export without data, and its weights are read from the checkpoint only while the
file is written: each tensor is loaded, written and freed before the next one, so the peak
memory is about one tensor. Names are the ``state_dict`` names of the model given to
``to_onnx`` (the initializers' names).
"""

from __future__ import annotations

import glob
import os
from typing import Any, NamedTuple

import numpy as np

from tonnx._errors import OutputFileError
from tonnx.builder import _constants, _proto
from tonnx.pipeline.write._sinks import FileRange

#: torch dtype -> the safetensors format's dtype code (the bytes are the same, little-endian)
_SAFETENSORS_CODES = {
    "torch.float64": "F64", "torch.float32": "F32", "torch.float16": "F16", "torch.bfloat16": "BF16",
    "torch.int64": "I64", "torch.int32": "I32", "torch.int16": "I16", "torch.int8": "I8",
    "torch.uint8": "U8", "torch.bool": "BOOL",
}  # fmt: skip


class _Stored(NamedTuple):
    """Where a safetensors file holds a tensor, and as what."""

    path: str
    code: str  # the format's dtype code
    shape: tuple[int, ...]
    begin: int  # first byte in the file
    end: int


def expand(weights: Any) -> list[str]:
    """Paths of a path, a glob or a list of them, in sorted order."""
    if isinstance(weights, SafetensorsWeights):
        return list(weights.paths)
    items = [weights] if isinstance(weights, (str, os.PathLike)) else list(weights)
    paths: list[str] = []
    for item in items:
        item = os.fspath(item)
        found = sorted(glob.glob(item)) if glob.has_magic(item) else [item]
        if not found or not all(os.path.isfile(p) for p in found):
            raise OutputFileError(f"weights={item!r}: no safetensors file there.")
        paths.extend(found)
    return paths


class SafetensorsWeights:
    """Maps tensor names to the safetensors file holding them; loads one at a time.

    ``aliases`` maps a model's tensor name to the checkpoint's name for it, when the two
    differ: a tied weight saved once (``lm_head.weight`` -> ``model.embed_tokens.weight``),
    a tensor transformers renames when loading (GPT-NeoX's ``embed_out.weight``). It may
    be passed to ``to_onnx(weights=...)`` instead of the paths. ``cast_floats``: a floating
    tensor stored in another floating dtype than the model declares (a bfloat16 checkpoint
    exported in float32) is converted, one tensor at a time; without it that is an error.
    """

    def __init__(self, weights: Any, aliases: dict[str, str] | None = None, *,
                 cast_floats: bool = False):
        self.paths = expand(weights)
        self._aliases = dict(aliases or {})
        self._cast_floats = cast_floats
        #: checkpoint name -> where it is stored (the first file holding it)
        self._stored: dict[str, _Stored] = {}
        #: initializers computed from others as they are written (builder/_derived.py)
        self.derivations: dict[str, Any] = {}
        for path in self.paths:
            for key, entry in _header(path).items():
                self._stored.setdefault(key, entry)

    def with_derivations(self, derivations: dict[str, Any]) -> SafetensorsWeights:
        """A copy that also computes the graph's derived initializers from their sources."""
        import copy

        source = copy.copy(self)
        source.derivations = {**self.derivations, **derivations}
        return source

    def load(self, name: str, like) -> Any:
        """The tensor ``name``, checked against the shape and dtype the model declares: its
        bytes read in one sequential pass when stored as declared, else read (and cast) by
        safetensors."""
        from safetensors import safe_open

        if name in self.derivations:
            return self._derive(name, like)

        stored = self._aliases.get(name, name)
        entry = self._stored.get(stored)
        if entry is None:
            raise OutputFileError(
                f"Weight {name!r} is on the 'meta' device and in none of the safetensors files "
                f"({len(self._stored)} tensors, e.g. {sorted(self._stored)[:3]}). The names must "
                f"be the state_dict names of the model given to to_onnx; a non-persistent "
                f"buffer (e.g. rotary inv_freq) must be built on CPU, not on 'meta'."
            )
        if _stored_as(entry, like) and entry.end > entry.begin:
            return _read(entry, like)
        path = entry.path
        with safe_open(path, framework="pt") as f:
            tensor = f.get_tensor(stored)
        if self._cast_floats and tensor.dtype != like.dtype and tensor.is_floating_point() \
                and like.dtype.is_floating_point:
            tensor = tensor.to(like.dtype)
        if tuple(tensor.shape) != tuple(like.shape) or tensor.dtype != like.dtype:
            raise OutputFileError(
                f"Weight {name!r} in {path!r} is {tensor.dtype} {tuple(tensor.shape)}, the "
                f"model expects {like.dtype} {tuple(like.shape)}."
            )
        return tensor

    def _derive(self, name: str, like) -> np.ndarray:
        derivation = self.derivations[name]
        values = [
            _constants.as_numpy(v if _constants.has_data(v) else self.load(source, v))
            for source, v in derivation.sources
        ]
        value = derivation.compute(*values)
        del values
        if tuple(value.shape) != tuple(like.shape) or _constants.elem_type(value) != _constants.elem_type(like):
            raise OutputFileError(
                f"Derived weight {name!r} computed as {value.dtype} {tuple(value.shape)}, the graph "
                f"declares {like.dtype} {tuple(like.shape)} (a pack's rewrite is wrong)."
            )
        return value

    def file_range(self, name: str, like) -> FileRange | None:
        """Where the checkpoint holds ``name``'s bytes as written (stored in the dtype and
        shape the model declares, not derived): the writer copies them file to file. None
        otherwise (:meth:`payload` loads, casts or computes it, or says what is wrong)."""
        if _constants.has_data(like) or name in self.derivations:
            return None
        entry = self._stored.get(self._aliases.get(name, name))
        if entry is None or not _stored_as(entry, like):
            return None
        return FileRange(entry.path, entry.begin, entry.end - entry.begin)

    def payload(self, name: str, value) -> Any:
        """Bytes of an initializer: read from the files for a 'meta' tensor; a derived one
        as computed, in any layout (the writer puts a transposed view in C order)."""
        if name in self.derivations:
            return _proto.tensor_array(self._derive(name, value))
        if not _constants.has_data(value):
            value = self.load(name, value)
        return _proto.tensor_bytes(value)


def _stored_as(entry: _Stored, like) -> bool:
    """The checkpoint holds the tensor in the dtype and shape the model declares."""
    return entry.code == _SAFETENSORS_CODES.get(str(like.dtype)) and entry.shape == tuple(like.shape)


def _read(entry: _Stored, like):
    """A torch tensor of ``entry``'s bytes, read front to back into one buffer.

    Not a mapping of the file: a transposed copy or the quantizer's transpose reads a mapping
    by columns, which from a cold page cache faults pages in a scattered order (the 1 B
    Llama's projections, read and transposed by 2 threads: 12.2 s mapped, 8.1 s read, the
    same 3.5 s warm), and a checkpoint changed during the export would kill the process with
    SIGBUS instead of raising."""
    import torch

    data = np.empty(entry.end - entry.begin, np.uint8)
    view = memoryview(data)
    with open(entry.path, "rb", buffering=0) as f:
        done = 0
        while done < len(view):  # one read() returns at most ~2 GB on Linux
            got = os.preadv(f.fileno(), [view[done:]], entry.begin + done)
            if got <= 0:
                raise OutputFileError(f"weights: {entry.path!r} ends inside a tensor (truncated file?).")
            done += got
    return torch.from_numpy(data).view(like.dtype).view(tuple(like.shape))


def _header(path: str) -> dict[str, _Stored]:
    """A safetensors file's tensors by name.

    The format: an 8-byte little-endian header size, the JSON header, then the data; each
    tensor's ``data_offsets`` count from the data's start."""
    import json

    try:
        with open(path, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size))
        start = 8 + size
        return {
            key: _Stored(path, entry["dtype"], tuple(entry["shape"]), start + entry["data_offsets"][0],
                         start + entry["data_offsets"][1])
            for key, entry in header.items() if key != "__metadata__"
        }
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise OutputFileError(f"weights: {path!r} is not a safetensors file ({e}).") from e
