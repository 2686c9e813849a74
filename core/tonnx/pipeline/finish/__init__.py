"""Step 4, finish: validation, passes, pack rewrites, functions and metadata on the built graph."""
