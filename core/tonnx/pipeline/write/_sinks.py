"""Where large initializers go when a model is written: a data file next to it
(:class:`ExternalDataWriter`) or the model file itself, after the proto (:class:`InlineStreamer`).

``builder._proto.to_model_proto`` hands each large tensor to the sink; the sink plans it and
the file writer writes its bytes straight from the tensor."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from onnx import TensorProto

from tonnx._errors import OutputFileError

from tonnx.builder import _constants
from tonnx.builder._proto import nbytes, no_data_error, tensor_bytes

#: Tensors at least this large go to the external data file when one is used.
EXTERNAL_MIN_BYTES = 1024


class ExternalDataWriter:
    """Large initializers go to one data file next to the model.

    :meth:`add` only plans each tensor's offset (4 KiB aligned, so runtimes can memory-map
    them), so the model proto never holds the bytes and a model over 2 GB serializes without
    protobuf's size limit; :meth:`close` writes them, from the tensors' own memory.
    ``payload(name, value)`` gives the bytes (weights read lazily for tensors on the ``meta``
    device); the default views the value itself.
    """

    #: subgraph initializers may go to the data file too
    subgraphs = True

    def __init__(self, path: str, location: str, payload=None):
        self.location = location
        self.path = path
        self._payload = payload or default_payload
        #: (name, value, offset, size) of every tensor to write, in file order
        self.planned: list[tuple[str, Any, int, int]] = []
        #: (proto, name, value) of each tensor, to give the proto its bytes back
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
        proto.data_location = TensorProto.EXTERNAL
        for key, value_ in (
            ("location", self.location),
            ("offset", str(self.offset)),
            ("length", str(size)),
        ):
            entry = proto.external_data.add()
            entry.key = key
            entry.value = value_
        self.offset += size

    def close(self) -> None:
        """Writes the planned tensors (once)."""
        if self._written:
            return
        self._written = True
        with open(self.path, "wb") as f:
            write_tensors(f, self.planned, self._payload)


class InlineStreamer:
    """Leaves large main-graph initializers without ``raw_data`` in the proto and remembers
    them, so :mod:`._file_writer` writes their bytes straight from the tensors."""

    subgraphs = False

    def __init__(self):
        #: initializer name -> value whose bytes the file writer appends
        self.values: dict[str, Any] = {}
        #: (proto, name, value) of each, to give the proto its bytes back
        self.protos: list[tuple[TensorProto, str, Any]] = []

    def takes(self, value) -> bool:
        return not _constants.has_data(value) or nbytes(value) >= EXTERNAL_MIN_BYTES

    def add(self, proto: TensorProto, name: str, value) -> None:
        self.values[name] = value
        self.protos.append((proto, name, value))


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


def load_checked(payload):
    """``load(item)``: the payload's bytes of ``item``, checked against the tensor's size."""
    def load(item):
        name, value = item[0], item[1]
        data = payload(name, value)
        if data.nbytes != nbytes(value):
            raise OutputFileError(
                f"Initializer {name!r} has {data.nbytes} bytes, "
                f"expected {nbytes(value)}."
            )
        return data

    return load


def write_tensors(f, planned, payload) -> None:
    """Writes each ``(name, value, offset, size)`` at its offset (zero padding between)."""
    position = 0
    for (_, _, offset, _), data in prefetch(planned, load_checked(payload)):
        f.write(b"\0" * (offset - position))
        f.write(data)
        position = offset + data.nbytes
        del data
