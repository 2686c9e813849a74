"""Tools built on the pipeline: the command line, the export report, coverage, pretty text."""
