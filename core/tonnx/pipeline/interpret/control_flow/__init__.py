"""The higher-order ops torch.export emits, one module per construct: ``torch.cond`` (If),
``while_loop`` (Loop), ``scan`` and ``map`` (Scan), ``invoke_subgraph`` (a local function),
and the wrappers inlined in place. ``_bodies`` converts a submodule into a subgraph."""
