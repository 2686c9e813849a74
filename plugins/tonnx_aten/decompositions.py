"""Decomposition converters: the tail of ATen, lowered by torch's own decompositions.

torch.onnx decomposes the whole program to Core ATen before translating it (most of its
export time). tonnx instead decomposes only the nodes no direct converter handles: for
every functional ATen op that torch decomposes (``torch._decomp``'s table, then the ops
with a CompositeImplicitAutograd kernel, as ``torch.export.default_decompositions()``),
this module registers a ``Converter`` at priority 50, below the pack's direct converters
(100), whose function traces torch's decomposition of that one call (``make_fx`` on the
node's FakeTensors, so symbolic shapes stay symbolic) and converts the small graph through
the same registry (``tonnx.converters.convert_graph``).

- The set is computed from torch's tables, never hand-listed; ``tests/aten/
  test_decompositions.py`` checks it converts (and the OpInfo sweep measures it).
- The interpreter traces while planning (the ``expand`` attribute), so a decomposition
  reaching an op without converter is reported with every other missing op, at once.
- Traces are memoized per export by (op, input dtypes and shapes, constant arguments):
  a model repeating a layer traces each distinct call once.
- A decomposition that would specialize a dynamic dimension (it adds a guard to the
  export's shape environment) or that does not decompose the call raises
  UnsupportedError: never a graph valid for the example shapes only.
- Nothing is traced unless a model uses such an op: models converted by direct converters
  only pay for building the table, once per process.
"""

from __future__ import annotations

import functools

from tonnx import Converter, UnsupportedError
from tonnx.converters import convert_graph

#: Below the aten pack's direct converters (100): a direct converter always wins.
PRIORITY = 50


def decomposition_table() -> dict:
    """Functional ATen op overload -> the decomposition torch uses for it."""
    import torch
    from torch._decomp import decomposition_table as table

    found = {}
    for op, fn in table.items():
        if _eligible(op):
            found[op] = fn
    # ops with a CompositeImplicitAutograd kernel (torch.export keeps them: numpy_T,
    # cross_entropy_loss, hsplit...); their decomposition is that kernel
    for name in torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd"):
        op = _overload(torch, name)
        if op is not None and op not in found and _eligible(op):
            found[op] = op.decompose
    return found


def _overload(torch, name: str):
    """``aten::hsplit.array`` -> torch.ops.aten.hsplit.array (None for another namespace)."""
    ns, _, rest = name.partition("::")
    if ns != "aten":
        return None
    packet, _, overload = rest.partition(".")
    return getattr(getattr(torch.ops.aten, packet, None), overload or "default", None)


def _eligible(op) -> bool:
    import torch

    return (
        isinstance(op, torch._ops.OpOverload)
        and op.namespace == "aten"
        and not op._schema.is_mutable
        and op._overloadname != "out"
    )


def key_of(op) -> str:
    return f"{op._schema.name}.{op._overloadname}"


def decomposition_converter(op, decomposition):
    """The converter function of ``op``: it emits the graph its ``expand`` traced."""

    def converter(g, sts, outputs, *args, **kwargs):
        results = convert_graph(g, sts, outputs)
        if type(results) is str:
            return g.op.Identity(results, outputs=outputs) if outputs and outputs[0] else results
        return tuple(g.op.Identity(r, outputs=[o]) if o and r else r for r, o in zip(results, outputs))

    key = key_of(op)
    if getattr(decomposition, "__self__", None) is op:
        source = "its CompositeImplicitAutograd kernel (OpOverload.decompose)"
    else:
        where = getattr(decomposition, "__module__", None) or "?"
        source = f"{where}.{getattr(decomposition, '__qualname__', repr(decomposition))}"
    converter.__name__ = f"aten_{op._schema.name.partition('::')[2]}_{op._overloadname}_decomposed"
    converter.__qualname__ = f"decomposed[{key}]"
    converter.__doc__ = (
        f"{op._schema}\n\nDecomposed by torch's decomposition, {source}, traced for each "
        f"distinct call and converted op by op through the registry (the ops it reaches, "
        f"listed by the export when one has no converter, depend on the call)."
    )
    converter.expand = functools.partial(expand, op, decomposition)
    converter.decomposition = decomposition  # for tools that show the source (tonnx explain)
    return converter


def expand(op, decomposition, args, kwargs, cache: dict):
    """The FX graph of ``decomposition`` for this call, traced once per distinct call."""
    key = (op, _signature((args, kwargs)))
    found = cache.get(key)
    if found is None:
        found = cache[key] = _trace(op, decomposition, args, kwargs)
    return found


def _signature(tree) -> tuple:
    import torch
    import torch.utils._pytree as pytree

    sig = []
    for leaf in pytree.tree_leaves(tree):
        if isinstance(leaf, torch.Tensor):
            sig.append(("T", leaf.dtype, tuple(str(d) for d in leaf.shape), tuple(str(s) for s in leaf.stride())))
        elif isinstance(leaf, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            sig.append(("S", type(leaf).__name__, str(leaf)))
        else:
            sig.append(("C", type(leaf).__name__, repr(leaf)))
    return tuple(sig)


def _is_value(leaf) -> bool:
    import torch

    return isinstance(leaf, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool))


def _trace(op, decomposition, args, kwargs):
    import torch
    import torch.utils._pytree as pytree
    from torch.fx.experimental.proxy_tensor import make_fx

    leaves, spec = pytree.tree_flatten(_as_eager(decomposition, args, kwargs))
    slots = [i for i, leaf in enumerate(leaves) if _is_value(leaf)]
    inputs = [leaves[i] for i in slots]
    fake_mode, shape_env = _modes(inputs)

    def call(*values):
        filled = list(leaves)
        for i, v in zip(slots, values):
            filled[i] = v
        a, k = pytree.tree_unflatten(filled, spec)
        out = decomposition(*a, **k)
        if out is NotImplemented:
            raise UnsupportedError(f"torch's decomposition of {key_of(op)} does not handle this call.")
        return tuple(out) if isinstance(out, tuple) else out  # a named tuple would be traced as a call

    guards = len(shape_env.guards) if shape_env is not None else 0
    try:
        with fake_mode:
            gm = make_fx(call)(*inputs)
            if _mutates(gm):
                # a decomposition writing through a view (diagonal_scatter's copy_to into
                # a diagonal): converted op by op, the write would be lost
                gm = make_fx(torch.func.functionalize(call, remove="mutations"))(*inputs)
    except UnsupportedError:
        raise
    except Exception as e:
        raise UnsupportedError(
            f"torch's decomposition of {key_of(op)} could not be traced for this call: "
            f"{type(e).__name__}: {e}"
        ) from e
    if _mutates(gm):
        raise UnsupportedError(f"torch's decomposition of {key_of(op)} writes into a view even functionalized.")
    if shape_env is not None and len(shape_env.guards) != guards:
        new = [str(gd.expr) for gd in shape_env.guards[guards:]]
        raise UnsupportedError(
            f"torch's decomposition of {key_of(op)} specializes a dynamic dimension "
            f"(it adds the guard(s) {new}); export with static shapes for this input, or "
            f"register a direct converter."
        )
    _check_graph(op, gm)
    return gm


#: ATen's ``at::Reduction`` enum, which the schema's ``int reduction`` carries
_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _as_eager(decomposition, args, kwargs) -> tuple:
    """The call's arguments as an eager call would pass them to ``decomposition``.

    FX hands list arguments as ``immutable_list``, which a decomposition may assign into
    (``_unsafe_masked_index`` clamps ``indices[i]`` in place); eager passes a fresh list.
    ATen's schema carries ``reduction`` as an int (``at::Reduction``) while torch._refs'
    losses (``hinge_embedding_loss``, ``margin_ranking_loss``, ``huber_loss``) take
    ``"none"``/``"mean"``/``"sum"``.
    """
    import inspect

    args, kwargs = _thaw(args), _thaw(kwargs)
    try:
        signature = inspect.signature(decomposition)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return args, kwargs
    parameter = signature.parameters.get("reduction")
    value = bound.arguments.get("reduction")
    if parameter is not None and type(value) is int and isinstance(parameter.default, str):
        if value not in _REDUCTION:
            raise UnsupportedError(f"reduction={value} is not one of ATen's reductions {_REDUCTION}.")
        bound.arguments["reduction"] = _REDUCTION[value]
    return tuple(bound.args), dict(bound.kwargs)


def _thaw(value):
    """FX's immutable lists and dicts, nested, as plain ones."""
    if isinstance(value, list):
        return [_thaw(v) for v in value]
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(_thaw(v) for v in value)
    if isinstance(value, dict):
        return {k: _thaw(v) for k, v in value.items()}
    return value


def _mutates(gm) -> bool:
    """True when an op of the trace writes into a view (copy_to into a diagonal).

    The interpreter rebinds a tensor written in place, which is exact for a fresh tensor
    but loses the write into the tensor a view aliases.
    """
    import torch

    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        if node.target._schema.is_mutable and node.args and _is_view(node.args[0]):
            return True
    return False


def _is_view(arg) -> bool:
    import torch

    target = getattr(arg, "target", None)
    if not isinstance(target, torch._ops.OpOverload):
        return False
    return any(r.alias_info is not None and not r.alias_info.is_write for r in target._schema.returns)


def _modes(inputs):
    """The export's fake mode and shape environment, found on the call's values."""
    import torch
    from torch._guards import detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake_mode = detect_fake_mode(inputs)
    if fake_mode is not None:
        return fake_mode, fake_mode.shape_env
    shape_env = next(
        (v.node.shape_env for v in inputs if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool))),
        None,
    )
    return FakeTensorMode(shape_env=shape_env), shape_env


def _check_graph(op, gm) -> None:
    """Refuses a trace that kept the op itself or captured a constant it cannot give."""
    from torch._subclasses.fake_tensor import FakeTensor

    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is op:
            raise UnsupportedError(f"torch's decomposition of {key_of(op)} does not decompose this call.")
        if node.op == "get_attr":
            value = getattr(gm, node.target)
            if isinstance(value, FakeTensor):
                constant = getattr(value, "constant", None)
                if constant is None:
                    raise UnsupportedError(
                        f"torch's decomposition of {key_of(op)} creates a tensor constant "
                        f"whose value tracing does not keep."
                    )
                setattr(gm, node.target, constant)


def converters() -> tuple:
    """One Converter per decomposable op, at PRIORITY (built once per process)."""
    return tuple(
        Converter(key_of(op), decomposition_converter(op, fn), priority=PRIORITY)
        for op, fn in sorted(decomposition_table().items(), key=lambda kv: key_of(kv[0]))
    )
CONVERTERS = converters()
