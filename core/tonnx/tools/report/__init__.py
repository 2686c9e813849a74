"""The export report: a record filled while an export runs, rendered as markdown."""
