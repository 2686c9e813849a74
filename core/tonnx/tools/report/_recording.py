"""One recorded export: the error noted, the record rendered as markdown and written."""

from __future__ import annotations

from tonnx.tools.report._markdown import render
from tonnx.tools.report._record import ExportRecord


def write(path: str, record: ExportRecord) -> None:
    """Writes the markdown report atomically, as a model file is written (a temporary file
    renamed when complete, a symlink written through, an existing file's mode kept)."""
    from tonnx.pipeline.write._file_writer import write_file

    write_file(path, render(record).encode("utf-8"), what="report")


class recording:
    """Context of one recorded export: notes the error, then writes the report if asked."""

    def __init__(self, record: ExportRecord | None, path: str | None):
        self.record = record
        self.path = path

    def __enter__(self) -> ExportRecord | None:
        return self.record

    def __exit__(self, kind, error, tb) -> None:
        record = self.record
        if record is None:
            return
        if error is not None:
            record.error = error
        record.stop_all()
        if self.path is not None:
            write(self.path, record)
