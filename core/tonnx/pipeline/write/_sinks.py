"""Where large initializers go when a model is written: a data file next to it
(:class:`ExternalDataWriter`) or the model file itself, after the proto (:class:`InlineStreamer`).

``builder._proto.to_model_proto`` hands each large tensor to the sink; the sink plans it and
the file writer writes its bytes straight from the tensor."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import TensorProto

from tonnx._errors import OutputFileError
from tonnx.builder import _constants
from tonnx.builder._proto import contiguous, copy_into, nbytes, no_data_error, tensor_bytes

#: Tensors at least this large go to the external data file when one is used.
EXTERNAL_MIN_BYTES = 1024


class ExternalDataWriter:
    """Large initializers go to one data file next to the model.

    :meth:`add` only plans each tensor's offset (4 KiB aligned, so runtimes can memory-map
    them), so the model proto never holds the bytes and a model over 2 GB serializes without
    protobuf's size limit; :meth:`close` writes them, from the tensors' own memory.
    ``payload(name, value)`` gives the bytes (weights read lazily for tensors on the ``meta``
    device), or a numpy array in any layout (a transposed view of a checkpoint
    tensor, put in C order as it is written); the default views the value itself.
    """

    #: subgraph initializers may go to the data file too
    subgraphs = True

    def __init__(self, path: str, location: str, payload=None, ranges=None):
        self.location = location
        self.path = path
        self._payload = payload or default_payload
        #: ``ranges(name, value)``: a :class:`FileRange` holding the tensor's bytes, or None
        self._ranges = ranges
        #: (name, value, offset, size) of every tensor to write, in file order
        self.planned: list[tuple[str, Any, int, int]] = []
        #: (proto, name, value) of each tensor
        self.protos: list[tuple[TensorProto, str, Any]] = []
        self.offset = 0
        self._written = False

    def takes(self, value) -> bool:
        return not _constants.has_data(value) or nbytes(value) >= EXTERNAL_MIN_BYTES

    def add(self, proto: TensorProto, name: str, value) -> None:
        self.offset += (-self.offset) % 4096
        size = nbytes(value)
        self.planned.append((name, value, self.offset, size))
        self.protos.append((proto, name, value))
        reference(proto, self.location, self.offset, size)
        self.offset += size

    def close(self) -> None:
        """Writes the planned tensors (once)."""
        if self._written:
            return
        self._written = True
        with open(self.path, "wb") as f:
            write_tensors(f, self.planned, self._payload, self._ranges)


class InlineStreamer:
    """Leaves large main-graph initializers without ``raw_data`` in the proto and remembers
    them, so :mod:`._file_writer` writes their bytes straight from the tensors (then points
    each proto at its bytes in the file written)."""

    subgraphs = False

    def __init__(self):
        #: initializer name -> value whose bytes the file writer appends
        self.values: dict[str, Any] = {}
        #: (proto, name, value) of each, to point the proto at its bytes once written
        self.protos: list[tuple[TensorProto, str, Any]] = []

    def takes(self, value) -> bool:
        return not _constants.has_data(value) or nbytes(value) >= EXTERNAL_MIN_BYTES

    def add(self, proto: TensorProto, name: str, value) -> None:
        self.values[name] = value
        self.protos.append((proto, name, value))


def reference(proto: TensorProto, location: str, offset: int, length: int) -> None:
    """Points ``proto`` (without ``raw_data``) at bytes ``[offset, offset + length)`` of the
    file ``location`` (relative to the model's folder): ONNX's external data, which
    ``onnx.load_external_data_for_model`` and onnxruntime read."""
    proto.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = proto.external_data.add()
        entry.key = key
        entry.value = value


def default_payload(name: str, value) -> memoryview:
    """The bytes of an initializer that holds its data (not a 'meta' tensor)."""
    if not _constants.has_data(value):
        raise no_data_error(name)
    return tensor_bytes(value)


def prefetch(items, load):
    """Yields ``(item, load(item))`` in order; the next item loads in a thread while the
    caller writes this one (a transpose or a checkpoint read overlaps the disk write)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        previous = None
        for item in items:
            future = pool.submit(load, item)
            if previous is not None:
                yield previous[0], previous[1].result()
            previous = item, future
        if previous is not None:
            yield previous[0], previous[1].result()


@dataclass(frozen=True)
class FileRange:
    """Bytes ``[offset, offset + nbytes)`` of the file ``path`` that are a tensor's bytes as
    written (a checkpoint tensor stored as the model declares it): copied from file to file
    by the kernel, never through Python's memory."""

    path: str
    offset: int
    nbytes: int


def copy_range(source: FileRange, out: int, at: int) -> None:
    """Copies ``source``'s bytes into the file descriptor ``out`` at byte ``at``."""
    with open(source.path, "rb") as src:
        done = 0
        while done < source.nbytes:
            n = _copy(src.fileno(), out, source.nbytes - done, source.offset + done, at + done)
            if n <= 0:
                raise OutputFileError(f"{source.path!r} ends before byte {source.offset + source.nbytes}.")
            done += n


def _copy(src: int, out: int, count: int, at: int, to: int) -> int:
    """``os.copy_file_range`` (in the kernel; Linux), else a bounded read and write."""
    if hasattr(os, "copy_file_range"):
        try:
            return os.copy_file_range(src, out, count, at, to)
        except OSError:  # a filesystem or kernel without it: copy through a buffer
            pass
    chunk = os.pread(src, min(count, 1 << 26), at)
    return os.pwrite(out, chunk, to)


def as_bytes(data) -> memoryview:
    """A payload's bytes in file order (a strided array is copied to C order)."""
    if isinstance(data, np.ndarray):
        return contiguous(data).reshape(-1).view(np.uint8).data
    return memoryview(data).cast("B")


def write_at(out: int, data, at: int) -> None:
    """Writes the bytes ``data`` (a buffer) into the file descriptor ``out`` at byte ``at``."""
    view = as_bytes(data)
    done = 0
    while done < view.nbytes:
        done += os.pwrite(out, view[done:done + (1 << 30)], at + done)


#: bytes of a strided tensor put in C order at a time before they are written
PLACE_CHUNK = 1 << 26


def place(data: np.ndarray, out: int, at: int) -> None:
    """Writes an array of any layout into ``out`` at byte ``at``. A strided one (a weight
    stored transposed, a view of a checkpoint tensor) is put in C order by slabs of
    rows into one reused buffer, each written at once: no copy of the whole tensor in memory.
    On a 1 B Llama the transposing copies took 4.6 s of the 28 s its 4.1 GB took to write."""
    if data.flags.c_contiguous or data.ndim == 0 or data.size == 0:
        write_at(out, data, at)
        return
    row_bytes = data.nbytes // data.shape[0]
    step = max(1, PLACE_CHUNK // row_bytes)
    buffer = np.empty(min(step, data.shape[0]) * row_bytes, np.uint8)
    for row in range(0, data.shape[0], step):
        part = data[row:row + step]
        target = buffer[:part.nbytes].view(data.dtype).reshape(part.shape)
        copy_into(target, part)
        write_at(out, target, at + row * row_bytes)


def load_checked(payload, ranges=None):
    """``load(item)``: the tensor's :class:`FileRange` (``ranges``), else the payload's bytes
    of ``item``, checked against the tensor's size."""
    def load(item):
        name, value = item[0], item[1]
        data = ranges(name, value) if ranges is not None else None
        if data is None:
            data = payload(name, value)
        if data.nbytes != nbytes(value):
            raise OutputFileError(
                f"Initializer {name!r} has {data.nbytes} bytes, "
                f"expected {nbytes(value)}."
            )
        return data

    return load


def write_tensors(f, planned, payload, ranges=None) -> None:
    """Writes each ``(name, value, offset, size)`` at its offset into the open file ``f``,
    sized first: the gaps between tensors are zeros."""
    if not planned:
        return
    f.flush()
    out = f.fileno()
    os.ftruncate(out, planned[-1][2] + planned[-1][3])
    for (_, _, offset, _), data in prefetch(planned, load_checked(payload, ranges)):
        if type(data) is FileRange:
            copy_range(data, out, offset)
        elif isinstance(data, np.ndarray):
            place(data, out, offset)
        else:
            write_at(out, data, offset)
        del data
