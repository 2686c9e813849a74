"""Writing a model file: weights go from the tensors' memory to the disk, files switch atomically.

Inline (one ``.onnx``): the model is serialized without the large initializers' ``raw_data``
and this module writes the protobuf framing itself around each tensor's bytes (the wire format:
a tag ``field << 3 | 2`` and a varint length before each length-delimited field, fields in
ascending number as protobuf writes them), so the bytes equal ``model.SerializeToString()``
of the full model, without ever holding them in memory.

The proto returned holds no copy of the weights: each initializer written from a tensor then
references the file that holds its bytes (the data file, or the ``.onnx`` itself at the
offset of its ``raw_data``), as ``onnx.load(filename, load_external_data=False)`` would give
for a model with external data. Holding them again would cost a copy of the weights in memory
and more time than the write itself (24 ``Linear(2048, 2048)``: +2.7 s, +1.04x the weights).

Consistency: everything is written under temporary names ``<base>[.data|.1.data].tmp-tonnx-
<pid>-<hex>`` (``<16 hex digits of the name's sha256>.tmp-tonnx-<pid>-<hex>`` when that would
exceed the folder's NAME_MAX) and renamed when complete; the ``.onnx`` is switched last. An
external data file never takes the name the current ``.onnx`` references (``<base>.data`` and
``<base>.1.data`` alternate when a model is overwritten), so a crash at any point leaves
either the old pair or the new pair, never a new ``.data`` beside an old ``.onnx``. An
exception (KeyboardInterrupt included) or a SIGTERM during the write removes the temporaries;
those of a dead process (SIGKILL) and data files no model references are removed by the next
write to the same path. Safe against process crashes; there is no fsync, so not against power
loss.

Nothing but a regular file is replaced: a symlink is written through (the files go beside its
target), a FIFO, device or socket at the path is refused, and a replaced file's mode (and
owner, when root writes) carries over to the new one.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from typing import Any

import onnx
from onnx import GraphProto, ModelProto, TensorProto

from tonnx._errors import OutputFileError
from tonnx._sigterm import sigterm_raises
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


def write_inline(model: ModelProto, streamed: dict[str, Any], f, payload) -> dict[str, int]:
    """Writes ``model`` to ``f``; initializers named in ``streamed`` get their ``raw_data``
    from ``payload(name, value)`` (a memoryview of the tensor), written without a copy.
    Returns where each one's bytes start in the file."""
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
    offsets = {}
    for init, frame in zip(graph.initializer, frames):
        f.write(frame)
        if init.name in streamed:
            _, data = next(tensors)
            offsets[init.name] = f.tell()
            f.write(as_bytes(data))
            del data
    f.write(graph_after)
    f.write(model_after)
    return offsets


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
        #: the longest file name (in bytes) the folder's filesystem takes
        self.name_max = _name_max(self.folder)

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def fits(self, name: str) -> bool:
        return len(os.fsencode(name)) <= self.name_max

    def tmp(self, name: str) -> str:
        """``<name>.tmp-tonnx-<pid>-<hex>``, or a digest of ``name`` in place of ``name``
        when that is longer than NAME_MAX (a model named up to the limit is writable)."""
        if not self.fits(f"{name}{_TMP_MARK}{self.token}"):
            name = _digest(name)
        return self.path(f"{name}{_TMP_MARK}{self.token}")

    def data_paths(self) -> tuple[str, str]:
        return tuple(self.path(name) for name in data_names(self.base))

    def owns(self, path: str) -> bool:
        """Whether ``path`` (symlinks resolved) is this model or one of its data files."""
        return os.path.realpath(path) in (self.filename, *self.data_paths())

    def _error(self, why: str) -> OutputFileError:
        shown = self.given if self.given == self.filename else f"{self.given} -> {self.filename}"
        return OutputFileError(f"Cannot write {self.what}={shown!r}: {why}")

    def check_name(self) -> None:
        """The model's own name is within the filesystem's limit (else nothing can create it)."""
        size = len(os.fsencode(self.base))
        if size > self.name_max:
            raise self._error(
                f"its name has {size} bytes, over the {self.name_max}-byte limit of a file name "
                f"in {self.folder!r} (NAME_MAX); give a shorter name."
            )

    def check_data_names(self) -> None:
        """With external data the data file is ``<base>.data`` or ``<base>.1.data``
        (alternating on each overwrite): both names must be within the limit."""
        longest = data_names(self.base)[1]
        if not self.fits(longest):
            most = self.name_max - (len(os.fsencode(longest)) - len(os.fsencode(self.base)))
            raise self._error(
                f"with external data its data file is named {longest!r} on overwrite, over the "
                f"{self.name_max}-byte limit of a file name in {self.folder!r} (NAME_MAX): give "
                f"the model a name of at most {most} bytes (it has {len(os.fsencode(self.base))})."
            )

    def probe(self, *, data_files: bool = True, external_data: bool = False) -> None:
        """Checks the path can take a new file without replacing anything but a regular file,
        then creates and removes a temporary file: the folder is writable, nothing is left.
        ``external_data``: the data file names must fit the filesystem too."""
        if os.path.isdir(self.filename):
            raise self._error("it is a folder; give a file name in it.")
        if not os.path.isdir(self.folder):
            raise self._error(f"folder {self.folder!r} does not exist; create it first.")
        self.check_name()
        if external_data:
            self.check_data_names()
        # a data file name over the limit cannot exist: nothing to examine there
        data_paths = [p for p in self.data_paths() if self.fits(os.path.basename(p))] if data_files else []
        for path in (self.filename, *data_paths):
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
        names = (self.base, *data_names(self.base))
        stems = "|".join(re.escape(stem) for name in names for stem in (name, _digest(name)))
        pattern = re.compile(f"(?:{stems}){re.escape(_TMP_MARK)}" + r"(\d+)-[0-9a-f]+")
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


def _name_max(folder: str) -> int:
    """NAME_MAX of the filesystem holding ``folder`` (255 where it cannot be asked)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # a missing folder, no pathconf (Windows)
        return 255


def _digest(name: str) -> str:
    """A short stand-in for a file name in its temporaries' names."""
    return hashlib.sha256(os.fsencode(name)).hexdigest()[:16]


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


def save(g, filename: str, *, external_data: bool, payload=None, ranges=None) -> ModelProto:
    """Writes the builder's model to ``filename`` (see the module docstring) and returns it,
    each initializer written from a tensor referencing the bytes in the file that holds them
    (``location`` relative to the folder of the file written): ``onnx.load(filename)``, or
    ``onnx.load_external_data_for_model(model, folder)``, gives the whole model.
    ``ranges(name, value)`` may give a tensor's bytes as a range of another file (a
    checkpoint's), copied to the data file by the kernel."""
    payload = payload or _sinks.default_payload
    files = ModelFile(filename)
    files.probe(external_data=external_data)
    files.clean_stale()
    with sigterm_raises(resignal=True):
        if external_data:
            return _save_external(g, files, payload, ranges)
        return _save_inline(g, files, payload)


def _save_inline(g, files: ModelFile, payload) -> ModelProto:
    tmp_model = files.tmp(files.base)
    model_was = files.existing(files.base)
    try:
        sink = _sinks.InlineStreamer()
        model = g.to_onnx(external_data=sink)
        with open(tmp_model, "wb") as f:
            offsets = write_inline(model, sink.values, f, payload)
        _replace(tmp_model, files.filename, model_was)
        files.remove_unreferenced_data(None)
    except OSError as e:
        raise OutputFileError(f"Cannot write {files.given!r}: {e}") from e
    finally:
        _remove(tmp_model)
    for proto, name, value in sink.protos:
        _sinks.reference(proto, files.base, offsets[name], _proto.nbytes(value))
    return model


def _save_external(g, files: ModelFile, payload, ranges) -> ModelProto:
    tmp_model = files.tmp(files.base)
    model_was = files.existing(files.base)
    tmp_data = data_path = None
    try:
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
        _replace(tmp_model, files.filename, model_was)
        data_path = None  # referenced now: keep it
        files.remove_unreferenced_data(location)
    except OSError as e:
        raise OutputFileError(f"Cannot write {files.given!r}: {e}") from e
    finally:
        for path in (tmp_model, tmp_data, data_path):
            if path is not None:
                _remove(path)
    return model


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
    with sigterm_raises(resignal=True):
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            _replace(tmp, files.filename, was)
        except OSError as e:
            raise OutputFileError(f"Cannot write {what}={filename!r}: {e}") from e
        finally:
            _remove(tmp)
