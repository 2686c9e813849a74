"""Checking exported models against torch eager, for tonnx's tests and pack authors.

``check_model`` exports a model, runs it in onnxruntime (on the export inputs and on any
other input sets given) and compares every output with torch eager. ``check_op`` does the
same for one op called with fixed non-tensor arguments, and asserts the op really is in
the exported program, so a test cannot pass without exercising its converter.

This module is the pack author's kit: strategies and tensor makers for hypothesis tests
(``tensors``, ``shapes``, ``dtypes``...), the meta-tests every pack runs
(``assert_pack_covered``, ``assert_follows_schema``), and onnx's reference evaluator
extended with the installed packs' kernels (``ExtendedReferenceEvaluator``,
``run_reference``). Installing tonnx also installs a pytest plugin (``tonnx.tools._pytest_plugin``)
with the "ci" and "deep" hypothesis profiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tonnx.tools._expected import expected_outputs, mutation_outputs
from tonnx.tools._expected import to_numpy as _to_numpy
from tonnx.tools._coverage import assert_follows_schema, assert_pack_covered, covered_keys, pack_converters
from tonnx.authoring._reference import ExtendedReferenceEvaluator, reference_kernels
from tonnx.authoring._strategies import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    NUMBER_DTYPES,
    broadcast_shapes,
    dtypes,
    make_tensor,
    seeds,
    shapes,
    tensors,
    tolerance,
    with_specials,
)

__all__ = [
    "ALL_DTYPES",
    "ExtendedReferenceEvaluator",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "NUMBER_DTYPES",
    "assert_close",
    "assert_follows_schema",
    "assert_pack_covered",
    "broadcast_shapes",
    "check_model",
    "check_op",
    "covered_keys",
    "dtypes",
    "make_tensor",
    "op_keys",
    "op_module",
    "pack_converters",
    "reference_kernels",
    "run_onnxruntime",
    "run_reference",
    "seeds",
    "shapes",
    "tensors",
    "tolerance",
    "with_specials",
]


def op_module(
    op: Callable, n_tensors: int, constants: dict[int, Any] | None = None, kwargs: dict | None = None
):
    """An ``nn.Module`` calling ``op`` with tensors at ``n_tensors`` positions.

    ``constants`` holds the non-tensor positional arguments by position; ``kwargs`` the
    keyword arguments, passed as they are.
    """
    import torch

    constants = dict(constants or {})
    kwargs = dict(kwargs or {})

    class _Op(torch.nn.Module):
        def forward(self, *tensors):
            args, it = [], iter(tensors)
            for i in range(n_tensors + len(constants)):
                args.append(constants[i] if i in constants else next(it))
            return op(*args, **kwargs)

    return _Op()


def run_reference(model, feeds: Sequence[Any]) -> list[np.ndarray]:
    """Runs a model with onnx's reference evaluator and the installed packs' kernels for
    their domains (for dtypes onnxruntime lacks, and for custom domains)."""
    ref = ExtendedReferenceEvaluator(model)
    names = [i.name for i in model.graph.input]
    return ref.run(None, dict(zip(names, [_to_numpy(f) for f in feeds])))


def run_onnxruntime(model, feeds: Sequence[Any], session_options=None) -> list[np.ndarray]:
    """Runs an ``onnx.ModelProto`` on CPU; ``session_options`` (an
    ``onnxruntime.SessionOptions``) registers custom kernels, such as a pack's."""
    import onnxruntime

    session = onnxruntime.InferenceSession(
        model.SerializeToString(), session_options, providers=["CPUExecutionProvider"]
    )
    names = [i.name for i in session.get_inputs()]
    arrays = [_to_numpy(f) for f in feeds]
    return session.run(None, dict(zip(names, arrays)))


def assert_close(expected, got: np.ndarray, *, atol: float, rtol: float, what: str = "") -> None:
    """Compares a torch tensor with an onnxruntime array: dtype, shape, then values."""
    want = _to_numpy(expected)
    if want.dtype != got.dtype:
        raise AssertionError(f"{what}dtype differs: torch {want.dtype}, onnx {got.dtype}")
    if want.shape != got.shape:
        raise AssertionError(f"{what}shape differs: torch {want.shape}, onnx {got.shape}")
    if want.dtype.kind in "biu" or want.dtype == np.bool_:
        if not np.array_equal(want, got):
            raise AssertionError(f"{what}values differ:\ntorch {want}\nonnx  {got}")
        return
    want64, got64 = want.astype(np.float64), got.astype(np.float64)
    np.testing.assert_allclose(got64, want64, atol=atol, rtol=rtol, equal_nan=True, err_msg=what)


def op_keys(exported_program) -> set[str]:
    """Keys (``aten::add.Tensor``) of every op called in an ExportedProgram's graph."""
    from tonnx.dispatch import target_key

    keys = set()
    for module in exported_program.graph_module.modules():
        graph = getattr(module, "graph", None)
        if graph is None:
            continue
        for node in graph.nodes:
            if node.op == "call_function":
                keys.add(target_key(node.target))
    return keys


def check_model(
    model,
    args: tuple,
    kwargs: dict | None = None,
    *,
    other_inputs: Sequence[tuple] = (),
    atol: float = 1e-4,
    rtol: float = 1e-4,
    expect_ops: Sequence[str] = (),
    runtime: str = "onnxruntime",
    session_options=None,
    **to_onnx_kwargs: Any,
):
    """Exports ``model`` and checks onnxruntime against torch eager; returns the proto.

    ``expect_ops`` are op keys that must appear in the exported program.
    ``other_inputs`` are more input tuples (other shapes, for dynamic dimensions).
    ``runtime`` is ``"onnxruntime"`` or ``"reference"`` (onnx's reference evaluator, for
    dtypes such as bfloat16 that onnxruntime's CPU kernels often lack, and for packs'
    custom domains); ``session_options`` go to onnxruntime (a pack's kernels).
    """
    if runtime == "onnxruntime":
        def run(onx, feeds):
            return run_onnxruntime(onx, feeds, session_options)
    elif runtime == "reference":
        run = run_reference
    else:
        raise ValueError(f"runtime={runtime!r}: use 'onnxruntime' or 'reference'")
    from tonnx.pipeline._program import convert, export_program

    kwargs = dict(kwargs or {})
    dynamic_shapes = to_onnx_kwargs.pop("dynamic_shapes", None)
    ep = export_program(
        model, tuple(args), kwargs, dynamic_shapes=dynamic_shapes, dispatcher=to_onnx_kwargs.get("dispatcher")
    )
    missing = set(expect_ops) - op_keys(ep)
    if missing:
        raise AssertionError(f"{sorted(missing)} not in the exported program: {sorted(op_keys(ep))}")
    onx = convert(ep, **to_onnx_kwargs)
    mutations = mutation_outputs(onx)
    for inputs in (args, *other_inputs):
        expected, feeds = expected_outputs(model, inputs, kwargs, mutations)
        got = run(onx, feeds)
        if len(got) != len(expected):
            raise AssertionError(f"torch gives {len(expected)} outputs, onnx {len(got)}")
        for i, (e, o) in enumerate(zip(expected, got)):
            assert_close(e, o, atol=atol, rtol=rtol, what=f"output {i}: ")
    return onx


def check_op(
    op: Callable,
    tensors: Sequence[Any],
    *,
    constants: dict[int, Any] | None = None,
    kwargs: dict | None = None,
    expect_op: str | Sequence[str] = (),
    **check_kwargs: Any,
):
    """Checks one op: ``op(*args, **kwargs)`` with ``tensors`` filling the tensor slots."""
    module = op_module(op, len(tensors), constants, kwargs)
    expect = (expect_op,) if isinstance(expect_op, str) else tuple(expect_op)
    return check_model(module, tuple(tensors), expect_ops=expect, **check_kwargs)
