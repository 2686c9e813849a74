"""Step 2, prepare: the program made ready to interpret (mutations, slice writes, the dispatch plan)."""
