"""OpInfo conformance: torch's OpInfo database through tonnx and onnxruntime.

    python -m tests.conformance.opinfo                       # float32, default packs
    python -m tests.conformance.opinfo --dtype float16 --dtype int64 --dtype bool
    python -m tests.conformance.opinfo --fallback onnxscript # onnxscript fallback pack added
    python -m tests.conformance.opinfo --exporter torch.onnx # torch.onnx.export(dynamo=True)
    python -m tests.conformance.opinfo --ops 'sinc|logaddexp' --show mismatch,error
    python -m tests.conformance.opinfo --empty               # also every sample with an empty tensor

Every OpInfo of ``op_db`` is called on up to ``--samples`` CPU sample inputs per dtype,
exported and run in onnxruntime, and compared with torch eager. A sample ends in one of:

- ``pass``: onnxruntime matches torch (dtype, shape, values within the dtype's tolerance);
- ``mismatch``: it does not: a bug (the converter must be fixed or refuse that case);
- ``unsupported``: refused at export with a typed error (ConverterNotFoundError,
  UnsupportedError, or the other exporter's equivalent);
- ``error``: any other failure (a converter crash, onnxruntime refusing the model);
- ``skipped``: not a test of the exporter: torch.export cannot trace the sample, the
  sample has sparse or non-CPU values, or the op is random (an op tagged
  ``nondeterministic_seeded`` in the program, or eager differing from itself).

An op counts as passing when all its samples of that dtype pass; its class is the worst
of its samples (mismatch > error > unsupported > pass), skipped when all are skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

OUTCOMES = ("pass", "mismatch", "unsupported", "error", "skipped")
_RANK = {"mismatch": 4, "error": 3, "unsupported": 2, "pass": 1, "skipped": 0}

#: (atol, rtol) per dtype: onnxruntime and torch sum and round differently
TOLERANCE = {
    "float32": (1e-4, 1e-4),
    "float64": (1e-7, 1e-7),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}


#: Dtypes whose eager kernels round intermediates: a mismatch is checked against float64 too.
LOW_PRECISION = ("float16", "bfloat16")

#: Ops whose output torch leaves uninitialized: their shape and dtype are compared, not values.
UNINITIALIZED = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided"}
#: Ops whose order among equal values torch leaves open unless ``stable=True`` (the position
#: of ``dim`` in the sample's args): their indices are compared modulo ties.
TIE_ORDER_FREE = {"topk": 1, "sort": 0, "argsort": 0}


@dataclass
class Result:
    op: str
    dtype: str
    outcome: str
    detail: str = ""
    samples: list = field(default_factory=list)


class _Skip(Exception):
    pass


def _dtype(name: str):
    import torch

    return getattr(torch, name)


def _module(fn, leaves, spec, slots):
    import torch
    import torch.utils._pytree as pytree

    class OpInfoSample(torch.nn.Module):
        def forward(self, *tensors):
            filled = list(leaves)
            for i, t in zip(slots, tensors):
                filled[i] = t
            inp, args, kwargs = pytree.tree_unflatten(filled, spec)
            return fn(inp, *args, **kwargs)

    return OpInfoSample()


def _as_pairs(module, complex_inputs: list[bool]):
    """``module`` taking and returning complex tensors as real pairs (``view_as_real``), the
    form tonnx carries complex values in: model inputs and outputs stay real."""
    import torch
    import torch.utils._pytree as pytree

    def pairs(value):
        if isinstance(value, torch.Tensor) and value.is_complex():
            return torch.view_as_real(value.resolve_conj())
        return value

    class Pairs(torch.nn.Module):
        def forward(self, *tensors):
            tensors = [torch.view_as_complex(t) if c else t for t, c in zip(tensors, complex_inputs)]
            return pytree.tree_map(pairs, module(*tensors))

    return Pairs()


def _tensors(value) -> list:
    import torch
    import torch.utils._pytree as pytree

    return [v for v in pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def _prepare(opinfo, sample):
    """(module, input tensors, expected outputs) or _Skip."""
    import torch
    import torch.utils._pytree as pytree

    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    slots = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    tensors = [leaves[i] for i in slots]
    if not tensors:
        raise _Skip("no tensor input")
    if any(t.device.type != "cpu" or t.layout != torch.strided for t in tensors):
        raise _Skip("sparse or non-CPU input")
    complex_inputs = [t.is_complex() for t in tensors]
    tensors = [t.detach().resolve_conj().resolve_neg().contiguous() for t in tensors]
    tensors = [torch.view_as_real(t).contiguous() if c else t for t, c in zip(tensors, complex_inputs)]
    module = _as_pairs(_module(opinfo.op, leaves, spec, slots), complex_inputs)
    with torch.no_grad():
        first = _tensors(module(*[t.clone() for t in tensors]))
        second = _tensors(module(*[t.clone() for t in tensors]))
    if not first:
        raise _Skip("no tensor output")
    for a, b in zip(first, second):
        if a.shape != b.shape or not torch.equal(a.nan_to_num(), b.nan_to_num()):
            raise _Skip("random op (eager differs from itself)")
    return module, tensors, first


def _program(module, tensors):
    """torch.export's program, or _Skip: export failed, or the op draws random numbers."""
    import torch

    try:
        ep = torch.export.export(module, tuple(tensors))
    except Exception as e:
        raise _Skip(f"torch.export: {type(e).__name__}") from e
    seeded = torch.Tag.nondeterministic_seeded
    for node in ep.graph.nodes:
        if seeded in getattr(node.target, "tags", ()):
            raise _Skip(f"random op ({node.target})")
    return ep


def _export_tonnx(module, tensors, dispatcher):
    import tonnx
    from tonnx.pipeline._arguments import DEFAULT_OPSET
    from tonnx.pipeline._to_onnx import convert_program

    ep = _program(module, tensors)
    try:
        return convert_program(ep, {}, opsets={"": DEFAULT_OPSET}, dispatcher=dispatcher)
    except (tonnx.ConverterNotFoundError, tonnx.UnsupportedError) as e:
        raise _Unsupported(" ".join(str(e).split("\n")[:2])[:300]) from e


def _export_torch_onnx(module, tensors, dispatcher):
    import torch

    ep = _program(module, tensors)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            program = torch.onnx.export(ep, dynamo=True, verbose=False, report=False)
        except Exception as e:
            text = f"{type(e).__name__}: {e}"
            if "DispatchError" in text or "No decompositions registered" in text or "ConversionError" in text:
                raise _Unsupported(text.splitlines()[0][:300]) from e
            raise
    return program.model_proto


class _Unsupported(Exception):
    pass


def _compare(expected, got, dtype_name: str, *, values: bool = True) -> str:
    """'' when equal within tolerance, else what differs (``values=False``: dtype and shape)."""
    from tonnx.testing import assert_close

    atol, rtol = TOLERANCE.get(dtype_name, (0, 0))
    if len(got) != len(expected):
        return f"{len(expected)} outputs in torch, {len(got)} in onnx"
    for i, (e, o) in enumerate(zip(expected, got)):
        if not values:
            o = np.asarray(o)
            if (str(e.dtype).split(".")[-1], tuple(e.shape)) != (str(o.dtype), o.shape):
                return f"output {i}: torch {e.dtype} {tuple(e.shape)}, onnx {o.dtype} {o.shape}"
            continue
        if e.dtype.is_floating_point:
            a, r = TOLERANCE.get(str(e.dtype).split(".")[-1], (atol, rtol))
        else:
            a, r = 0, 0
        try:
            assert_close(e, np.asarray(o), atol=a, rtol=r, what=f"output {i}: ")
        except AssertionError as err:
            return str(err).replace("\n", " ")[:300]
    return ""


def run_sample(opinfo, sample, dtype_name: str, export, dispatcher) -> tuple[str, str]:
    from tonnx.testing import run_onnxruntime, run_reference

    try:
        module, tensors, expected = _prepare(opinfo, sample)
    except _Skip as e:
        return "skipped", str(e)
    except Exception as e:
        return "skipped", f"eager: {type(e).__name__}"
    try:
        model = export(module, tensors, dispatcher)
    except _Skip as e:
        return "skipped", str(e)
    except _Unsupported as e:
        return "unsupported", str(e)
    except Exception as e:
        return "error", f"export: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    import torch

    # onnxruntime's python API has no bfloat16 arrays: onnx's reference evaluator runs those
    bf16 = any(t.dtype == torch.bfloat16 for t in (*tensors, *expected))
    runtime = "reference evaluator" if bf16 else "onnxruntime"
    try:
        got = (run_reference if bf16 else run_onnxruntime)(model, tensors)
    except Exception as e:
        return "error", f"{runtime}: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
    expected, got = _with_written_inputs(module, tensors, expected, got, model)
    diff = _compare(expected, got, dtype_name, values=opinfo.name not in UNINITIALIZED)
    if diff and opinfo.name in TIE_ORDER_FREE and not sample.kwargs.get("stable"):
        diff = _compare_modulo_ties(opinfo.name, sample, tensors[0], expected, got, dtype_name)
    if diff and dtype_name in LOW_PRECISION and not _compare(_float64_reference(module, tensors, expected), got, dtype_name):
        return "pass", f"eager's {dtype_name} differs ({diff[:80]}...); onnx matches the float64 computation"
    return ("mismatch", diff) if diff else ("pass", "")


def _float64_reference(module, tensors, expected) -> list:
    """Eager's outputs computed in float64 from the same inputs, cast back to eager's dtypes.

    torch's float16 kernels round intermediate results to float16 (a sum overflows to inf, a
    convolution accumulates in half); onnxruntime often accumulates in float32. An onnx result
    that differs from eager's float16 but matches the float64 computation is the more exact one.
    """
    import torch

    wide = [t.double() if t.dtype in (torch.float16, torch.bfloat16) else t.clone() for t in tensors]
    try:
        with torch.no_grad():
            reference = _tensors(module(*wide))
    except Exception:  # the op refuses float64 inputs mixed with others: no reference
        return []
    if len(reference) != len(expected):
        return []
    return [r.to(e.dtype) for r, e in zip(reference, expected)]


def _with_written_inputs(module, tensors, expected, got, model):
    """Adds to ``expected`` the inputs the op writes (batch norm's running stats), which tonnx
    exports as outputs ``<input>.updated`` after the op's own: eager's value of each, written
    into a clone of the input."""
    import torch

    names = [o.name for o in model.graph.output]
    written = [n[: -len(".updated")] for n in names[len(expected):] if n.endswith(".updated")]
    inputs = [i.name for i in model.graph.input]
    if len(expected) + len(written) != len(got) or not set(written) <= set(inputs):
        return expected, got
    clones = [t.clone() for t in tensors]
    with torch.no_grad():
        module(*clones)
    return [*expected, *(clones[inputs.index(n)] for n in written)], got


def _compare_modulo_ties(name: str, sample, x, expected, got, dtype_name: str) -> str:
    """Indices of a sort or topk that torch does not make stable: equal when they pick the
    same values as torch's indices and never the same position twice along ``dim``."""
    import torch

    index = len(expected) - 1  # the indices are the last output
    diff = _compare(expected[:index], got[:index], dtype_name)
    if diff:
        return diff
    position = TIE_ORDER_FREE[name]
    dim = sample.args[position] if len(sample.args) > position else sample.kwargs.get("dim", -1)
    mine = torch.from_numpy(np.asarray(got[index]))
    theirs = expected[index]
    if x.dim() == 0 or mine.shape != theirs.shape:
        return f"indices: torch {tuple(theirs.shape)}, onnx {tuple(mine.shape)}"
    picked, wanted = torch.take_along_dim(x, mine, dim), torch.take_along_dim(x, theirs, dim)
    if not torch.equal(picked.nan_to_num(), wanted.nan_to_num()):
        return f"indices pick other values than torch's: {picked.flatten()[:8]} vs {wanted.flatten()[:8]}"
    distinct = mine.sort(dim).values.diff(dim=dim)
    if (distinct == 0).any():
        return "indices repeat a position along dim"
    return ""


def op_name(opinfo) -> str:
    return opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


def _has_empty_tensor(sample) -> bool:
    import torch
    import torch.utils._pytree as pytree

    leaves = pytree.tree_leaves((sample.input, tuple(sample.args), dict(sample.kwargs)))
    return any(isinstance(v, torch.Tensor) and v.numel() == 0 for v in leaves)


def _pick(generator, samples: int, empty: bool) -> list:
    """The first ``samples`` samples; with ``empty``, every later one holding an empty tensor
    too (a runtime's edge cases: onnxruntime 1.31.1 reduces empty tensors otherwise)."""
    picked = []
    for sample in generator:
        if len(picked) < samples:
            picked.append(sample)
        elif not empty:
            break
        elif _has_empty_tensor(sample):
            picked.append(sample)
    return picked


def run_op(opinfo, dtype_name: str, *, samples: int, export, dispatcher, empty: bool = False) -> Result:
    import torch

    dtype = _dtype(dtype_name)
    name = op_name(opinfo)
    if dtype not in opinfo.supported_dtypes("cpu"):
        return Result(name, dtype_name, "skipped", "dtype not supported by the op")
    try:
        picked = _pick(opinfo.sample_inputs("cpu", dtype, requires_grad=False), samples, empty)
    except Exception as e:
        return Result(name, dtype_name, "skipped", f"sample inputs: {type(e).__name__}")
    outcomes = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sample in picked:
            torch.manual_seed(0)
            outcomes.append(run_sample(opinfo, sample, dtype_name, export, dispatcher))
    if not outcomes:
        return Result(name, dtype_name, "skipped", "no sample")
    worst = max(outcomes, key=lambda o: _RANK[o[0]])
    if worst[0] == "skipped" or all(o[0] == "skipped" for o in outcomes):
        return Result(name, dtype_name, "skipped", worst[1], outcomes)
    tested = [o for o in outcomes if o[0] != "skipped"]
    worst = max(tested, key=lambda o: _RANK[o[0]])
    return Result(name, dtype_name, worst[0], worst[1], outcomes)


def select_ops(pattern: str | None, limit: int | None = None) -> list:
    from torch.testing._internal.common_methods_invocations import op_db

    ops = [o for o in op_db if pattern is None or re.search(pattern, op_name(o))]
    return ops[:limit] if limit else ops


def make_dispatcher(fallback: str | None):
    """The dispatcher for ``--fallback`` (None: the default one), or a message why not."""
    if not fallback:
        return None, ""
    import tonnx
    from tonnx.dispatch._manager import default_manager

    if fallback not in default_manager().specs:
        return None, f"fallback pack {fallback!r} is not installed: ran without it"
    return tonnx.Dispatcher(fallback=fallback), ""


def sweep(ops, dtypes, *, samples=2, exporter="tonnx", fallback=None, progress=None, empty=False) -> list[Result]:
    export = {"tonnx": _export_tonnx, "torch.onnx": _export_torch_onnx}[exporter]
    dispatcher, _note = make_dispatcher(fallback) if exporter == "tonnx" else (None, "")
    results = []
    for dtype_name in dtypes:
        for opinfo in ops:
            result = run_op(opinfo, dtype_name, samples=samples, export=export, dispatcher=dispatcher, empty=empty)
            results.append(result)
            if progress:
                progress(result)
    return results


def table(results: list[Result]) -> str:
    """Markdown table: op counts per outcome, one row per dtype."""
    by_dtype: dict[str, Counter] = {}
    for r in results:
        by_dtype.setdefault(r.dtype, Counter())[r.outcome] += 1
    lines = ["| dtype | " + " | ".join(OUTCOMES) + " | ops |", "|---" * (len(OUTCOMES) + 2) + "|"]
    for dtype, counts in by_dtype.items():
        lines.append(
            f"| {dtype} | " + " | ".join(str(counts[o]) for o in OUTCOMES) + f" | {sum(counts.values())} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.opinfo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", action="append", help="float32 (default), float16, bfloat16, int64, bool, ...")
    parser.add_argument("--samples", type=int, default=2, help="sample inputs per op and dtype (default 2)")
    parser.add_argument("--empty", action="store_true", help="also every later sample holding an empty tensor")
    parser.add_argument("--ops", help="regular expression on OpInfo names (name.variant)")
    parser.add_argument("--limit", type=int, help="first N matching OpInfos only")
    parser.add_argument("--fallback", help="enable a fallback pack, e.g. onnxscript")
    parser.add_argument("--exporter", default="tonnx", choices=["tonnx", "torch.onnx"])
    parser.add_argument("--show", default="mismatch,error", help="outcomes to list op by op")
    parser.add_argument("--list", help="write 'outcome dtype op detail' lines to this file")
    args = parser.parse_args(argv)
    dtypes = args.dtype or ["float32"]
    _dispatcher, note = make_dispatcher(args.fallback) if args.exporter == "tonnx" else (None, "")
    if note:
        print(f"NOTE: {note}")
    ops = select_ops(args.ops, args.limit)
    show = set(args.show.split(",")) if args.show else set()
    start = time.perf_counter()

    def progress(r: Result) -> None:
        if r.outcome in show:
            print(f"{r.outcome:11s} {r.dtype:8s} {r.op}: {r.detail}", flush=True)

    results = sweep(ops, dtypes, samples=args.samples, exporter=args.exporter, fallback=args.fallback,
                    progress=progress, empty=args.empty)
    label = args.exporter + (f" + fallback {args.fallback}" if args.fallback and not note else "")
    more = " and every sample with an empty tensor" if args.empty else ""
    print(f"\n{label}: {len(ops)} OpInfos, up to {args.samples} CPU samples each{more}, "
          f"{time.perf_counter() - start:.0f} s")
    print(table(results))
    if args.list:
        with open(args.list, "w") as f:
            for r in results:
                f.write(f"{r.outcome}\t{r.dtype}\t{r.op}\t{r.detail}\n")
    return 1 if any(r.outcome == "mismatch" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
