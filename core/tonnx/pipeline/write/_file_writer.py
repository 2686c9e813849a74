"""Writing a model file: weights go from the tensors' memory to the disk, files switch atomically.

Inline (one ``.onnx``): the model is serialized without the large initializers' ``raw_data``
and this module writes the protobuf framing itself around each tensor's bytes (the wire format:
a tag ``field << 3 | 2`` and a varint length before each length-delimited field, fields in
ascending number as protobuf writes them), so the bytes equal ``model.SerializeToString()``
of the full model, without ever holding them in memory.

Consistency: everything is written under temporary names ``<base>[.data|.1.data].tmp-tonnx-
<pid>-<hex>`` and renamed when complete; the ``.onnx`` is switched last. An external data file
never takes the name the current ``.onnx`` references (``<base>.data`` and ``<base>.1.data``
alternate when a model is overwritten), so a crash at any point leaves either the old pair or
the new pair, never a new ``.data`` beside an old ``.onnx``. Temporaries of a dead process
(SIGKILL) and data files no model references are removed by the next write to the same path.
Safe against process crashes; there is no fsync, so not against power loss.

Nothing but a regular file is replaced: a symlink is written through (the files go beside its
target), a FIFO, device or socket at the path is refused, and a replaced file's mode (and
owner, when root writes) carries over to the new one.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from typing import Any

import onnx
from onnx import GraphProto, ModelProto, TensorProto

from tonnx._errors import OutputFileError
from tonnx.builder import _proto
from tonnx.pipeline.write import _sinks
from tonnx.pipeline.write._sinks import as_bytes, load_checked, prefetch

_TMP_MARK = ".tmp-tonnx-"
_INITIALIZER = GraphProto.DESCRIPTOR.fields_by_name["initializer"].number
_GRAPH = ModelProto.DESCRIPTOR.fields_by_name["graph"].number
_RAW_DATA = TensorProto.DESCRIPTOR.fields_by_name["raw_data"].number
_LEN = 2  # wire type of length-delimited fields


def data_names(base: str) -> tuple[str, str]:
    """The two names an external data file of model ``base`` alternates between."""
    return f"{base}.data", f"{base}.1.data"


# -- protobuf wire format ---------------------------------------------------------------------


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_prefix(field: int, length: int) -> bytes:
    """Tag and length of a length-delimited field (the payload follows)."""
    return varint(field << 3 | _LEN) + varint(length)


def split_at(message, field: int) -> tuple[bytes, bytes]:
    """Serialized fields before and after ``field`` (which must be empty in ``message``)."""
    before, after = type(message)(), type(message)()
    before.CopyFrom(message)
    after.CopyFrom(message)
    for fd in message.DESCRIPTOR.fields:
        (before if fd.number > field else after).ClearField(fd.name)
    return before.SerializeToString(), after.SerializeToString()


def write_inline(model: ModelProto, streamed: dict[str, Any], f, payload) -> None:
    """Writes ``model`` to ``f``; initializers named in ``streamed`` get their ``raw_data``
    from ``payload(name, value)`` (a memoryview of the tensor), written without a copy."""
    graph = model.graph
    frames: list[bytes] = []  # each initializer's framing (all of it for a small one)
    items = []  # (name, value) of the streamed ones, in file order
    for init in graph.initializer:
        header = init.SerializeToString()
        if init.name in streamed:
            value = streamed[init.name]
            size = _proto.nbytes(value)
            raw = length_prefix(_RAW_DATA, size)
            frames.append(length_prefix(_INITIALIZER, len(header) + len(raw) + size) + header + raw)
            items.append((init.name, value))
        else:
            frames.append(length_prefix(_INITIALIZER, len(header)) + header)
    skeleton = ModelProto()
    skeleton.CopyFrom(model)
    skeleton.graph.ClearField("initializer")
    graph_before, graph_after = split_at(skeleton.graph, _INITIALIZER)
    skeleton.ClearField("graph")
    model_before, model_after = split_at(skeleton, _GRAPH)
    graph_size = len(graph_before) + len(graph_after) + sum(len(fr) for fr in frames)
    graph_size += sum(_proto.nbytes(value) for _, value in items)
    f.write(model_before)
    f.write(length_prefix(_GRAPH, graph_size))
    f.write(graph_before)
    tensors = prefetch(items, load_checked(payload))
    for init, frame in zip(graph.initializer, frames):
        f.write(frame)
        if init.name in streamed:
            _, data = next(tensors)
            f.write(as_bytes(data))
            del data
    f.write(graph_after)
    f.write(model_after)


# -- files --------------------------------------------------------------------------------------


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class ModelFile:
    """The files of one model path: temporary names, the data file to use, cleaning.

    A symlink is written through: ``filename`` is its target, and the temporaries and the
    data file go beside the target (``given`` keeps the path as the user wrote it)."""

    def __init__(self, filename: str, *, what: str = "filename"):
        self.given = os.path.abspath(filename)
        self.filename = os.path.realpath(filename)
        self.folder, self.base = os.path.split(self.filename)
        self.token = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.what = what

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def tmp(self, name: str) -> str:
        return self.path(f"{name}{_TMP_MARK}{self.token}")

    def data_paths(self) -> tuple[str, str]:
        return tuple(self.path(name) for name in data_names(self.base))

    def owns(self, path: str) -> bool:
        """Whether ``path`` (symlinks resolved) is this model or one of its data files."""
        return os.path.realpath(path) in (self.filename, *self.data_paths())

    def _error(self, why: str) -> OutputFileError:
        shown = self.given if self.given == self.filename else f"{self.given} -> {self.filename}"
        return OutputFileError(f"Cannot write {self.what}={shown!r}: {why}")

    def probe(self, *, data_files: bool = True) -> None:
        """Checks the path can take a new file without replacing anything but a regular file,
        then creates and removes a temporary file: the folder is writable, nothing is left."""
        if os.path.isdir(self.filename):
            raise self._error("it is a folder; give a file name in it.")
        if not os.path.isdir(self.folder):
            raise self._error(f"folder {self.folder!r} does not exist; create it first.")
        for path in (self.filename, *(self.data_paths() if data_files else ())):
            kind = _special_kind(path, self._error)
            if kind is not None:
                name = "it" if path == self.filename else f"its data file {path!r}"
                raise self._error(
                    f"{name} is {kind}, not a regular file: tonnx writes a temporary file and "
                    f"renames it over the path, which would replace it. Give the path of a "
                    f"regular file or of a new one."
                )
        if os.path.exists(self.filename) and not os.access(self.filename, os.W_OK):
            raise self._error("the file is read-only.")
        tmp = self.tmp(self.base)
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            os.remove(tmp)
        except OSError as e:
            raise self._error(f"folder {self.folder!r} is not writable ({e}).") from e

    def clean_stale(self) -> list[str]:
        """Removes temporaries of this path left by processes that no longer run (a process
        started after the temporary was last written reuses a dead writer's pid)."""
        pattern = re.compile(
            re.escape(self.base) + r"(?:\.data|\.1\.data)?" + re.escape(_TMP_MARK)
            + r"(\d+)-[0-9a-f]+"
        )
        removed = []
        for entry in os.listdir(self.folder):
            match = pattern.fullmatch(entry)
            if match and not _writing(int(match.group(1)), self.path(entry)):
                _remove(self.path(entry))
                removed.append(entry)
        return removed

    def free_data_name(self) -> str:
        """A data file name the current model does not reference (it may exist unreferenced)."""
        names = data_names(self.base)
        for name in names:
            if not os.path.exists(self.path(name)):
                return name
        # both exist (a crash before the unreferenced one was removed): read which is used
        used = referenced_locations(self.filename)
        for name in names:
            if name not in used:
                return name
        raise OutputFileError(
            f"{self.filename!r} references both {names[0]!r} and {names[1]!r}; "
            f"remove the model and its data files, then export again."
        )

    def remove_unreferenced_data(self, keep: str | None) -> None:
        for name in data_names(self.base):
            if name != keep and os.path.exists(self.path(name)):
                _remove(self.path(name))

    def existing(self, *names: str) -> os.stat_result | None:
        """``stat`` of the first of ``names`` (in this folder) that exists: the file a new
        one replaces, whose mode (and owner, for root) the new one keeps."""
        for name in names:
            try:
                return os.stat(self.path(name))
            except FileNotFoundError:
                continue
        return None


def _special_kind(path: str, error) -> str | None:
    """What ``path`` is if it exists and is a FIFO, a device or a socket (renaming a new file
    over it would replace it), else None."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:  # a symlink loop, a component that is not a folder
        raise error(f"{path!r} cannot be examined ({e}).") from e
    return next((kind for test, kind in _KINDS if test(mode)), None)


def _replace(tmp: str, path: str, old: os.stat_result | None) -> None:
    """Renames ``tmp`` over ``path``, first giving it the mode of the file it replaces (and
    its owner when running as root, who would otherwise take it over)."""
    if old is not None:
        root = hasattr(os, "geteuid") and os.geteuid() == 0
        if root and (old.st_uid, old.st_gid) != (0, 0):
            os.chown(tmp, old.st_uid, old.st_gid)
        os.chmod(tmp, stat.S_IMODE(old.st_mode))
    os.replace(tmp, path)


def _writing(pid: int, path: str) -> bool:
    """Whether process ``pid`` may still be writing ``path``: it runs and it started before
    the file was last written (else the pid was reused, common in containers)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = _start_time(pid)
    try:
        written = os.stat(path).st_mtime
    except FileNotFoundError:
        return True  # its writer removed it already
    return started is None or started <= written + 2  # /proc/stat's btime is whole seconds


def _start_time(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), None where /proc cannot say."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def referenced_locations(filename: str) -> set[str]:
    """External data files an existing model references (empty if it is absent or unreadable)."""
    if not os.path.exists(filename):
        return set()
    try:
        model = onnx.load(filename, load_external_data=False)
    except Exception:  # noqa: BLE001 - an unreadable old file references nothing we keep
        return set()
    return {
        entry.value
        for tensor in onnx.external_data_helper._get_all_tensors(model)
        if tensor.data_location == TensorProto.EXTERNAL
        for entry in tensor.external_data
        if entry.key == "location"
    }


def save(
    g, filename: str, *, external_data: bool, payload=None, return_data: bool = True, ranges=None
) -> ModelProto:
    """Writes the builder's model to ``filename`` (see the module docstring) and returns it.

    The proto returned is whole, what ``onnx.load(filename)`` gives (each initializer's bytes
    read once more from the tensors), unless ``return_data`` is False and the data went to an
    external file: its large initializers then reference that file by a name relative to the
    model's folder, as ``onnx.load(filename, load_external_data=False)`` gives (no copy of the
    weights in memory, for a model too large to hold twice). ``ranges(name, value)`` may
    give a tensor's bytes as a range of another file (a checkpoint's), copied to the data
    file by the kernel."""
    payload = payload or _sinks.default_payload
    files = ModelFile(filename)
    files.probe()
    files.clean_stale()
    tmp_model = files.tmp(files.base)
    tmp_data = data_path = None
    model_was = files.existing(files.base)
    try:
        if external_data:
            location = files.free_data_name()
            replaced = [n for n in data_names(files.base) if n != location]  # current data
            data_was = files.existing(*replaced, files.base)
            data_path, tmp_data = files.path(location), files.tmp(location)
            sink = _sinks.ExternalDataWriter(tmp_data, location, payload, ranges)
            model = g.to_onnx(external_data=sink)
            sink.close()
            with open(tmp_model, "wb") as f:
                f.write(model.SerializeToString())
            _replace(tmp_data, data_path, data_was)
        else:
            location = None
            sink = _sinks.InlineStreamer()
            model = g.to_onnx(external_data=sink)
            with open(tmp_model, "wb") as f:
                write_inline(model, sink.values, f, payload)
        _replace(tmp_model, files.filename, model_was)
        data_path = None  # referenced now: keep it
        files.remove_unreferenced_data(location)
    except OSError as e:
        raise OutputFileError(f"Cannot write {filename!r}: {e}") from e
    finally:
        for path in (tmp_model, tmp_data, data_path):
            if path is not None:
                _remove(path)
    if return_data or not external_data:
        fill_data(sink.protos, payload)
    return model


def fill_data(tensors, payload) -> None:
    """Gives each ``(proto, name, value)`` its bytes in ``raw_data`` (no external reference
    left), one tensor at a time: the proto becomes whole."""
    load = load_checked(payload)
    for proto, name, value in tensors:
        data = load((name, value))
        proto.raw_data = bytes(as_bytes(data))
        del data
        if proto.data_location == TensorProto.EXTERNAL:
            proto.data_location = TensorProto.DEFAULT
            del proto.external_data[:]


def write_model(model: ModelProto, filename: str) -> None:
    """Writes a finished ``model`` to ``filename`` (the model's own external data, if any,
    is the caller's)."""
    write_file(filename, model.SerializeToString())


def write_file(filename: str, data: bytes, *, what: str = "filename") -> None:
    """Writes ``data`` to ``filename`` through a temporary file renamed when complete: a
    symlink is written through, an existing file keeps its mode, anything but a regular file
    is refused."""
    files = ModelFile(filename, what=what)
    files.probe(data_files=False)
    files.clean_stale()
    tmp = files.tmp(files.base)
    was = files.existing(files.base)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        _replace(tmp, files.filename, was)
    except OSError as e:
        raise OutputFileError(f"Cannot write {what}={filename!r}: {e}") from e
    finally:
        _remove(tmp)
