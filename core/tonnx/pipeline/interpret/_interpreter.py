"""Interpreter: walks the FX graph of an ExportedProgram and fills a GraphBuilder.

It interprets, nothing else: each node goes to the converter the plan chose
(``prepare/_plan.py``); control flow (``_control_flow``), complex pairs (``_complex``), slice
writes (``prepare/_slice_writes.py``) and the program's inputs and outputs (``_io``) are
functions of their own modules that take this interpreter.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from typing import Any

from torch.fx import Node

from tonnx._errors import (
    ConversionError,
    ConverterOutputError,
    TonnxError,
    UnsupportedError,
)
from tonnx.authoring._script_converter import as_converter
from tonnx.dispatch._converter import target_key
from tonnx.pipeline.interpret import _complex, _control_flow, _io, _symbolic
from tonnx.pipeline.interpret._values import ResultInfo, ShapeNamer, complex_values, represented
from tonnx.pipeline.prepare import _mutations, _plan, _slice_writes


class Interpreter:
    """Converts one ExportedProgram into ``g``.

    A first pass resolves a converter for every node (all missing ops are reported at
    once); the second walks the nodes: placeholders become inputs and initializers,
    ``call_function`` nodes call their converter with ``(g, sts, outputs, *args)``, and
    the types and shapes torch.export recorded are set on each result here, centrally.
    """

    def __init__(
        self,
        g,
        registry,
        *,
        namer: ShapeNamer,
        on_missing: Callable[[dict[str, int]], Exception],
        input_names: list[str] | None = None,
        output_names: list[str] | None = None,
    ):
        self.g = g
        self.registry = registry
        self.namer = namer
        self.on_missing = on_missing
        self.input_names = list(input_names or [])
        self.output_names = list(output_names or [])
        self.env: dict[Any, Any] = {}
        self.plan: dict[Any, Any] = {}
        self.fallback_ops: Counter = Counter()
        self.symbolic = _symbolic.handlers()
        self.no_ops = _symbolic.no_op_targets()
        self.higher_order = _control_flow.targets()
        self._keys: dict[Any, str] = {}
        self._labels: dict[Any, str] = {}
        self._written: dict[Any, tuple[int, ...]] = {}
        #: candidate -> what to call: its function, or an adapter (an onnxscript function)
        self._functions: dict[Any, Callable] = {}
        #: one export's memo for graph converters (``expand``), e.g. traced decompositions
        self.cache: dict[Any, Any] = {}
        self.expansions: dict[Any, Any] = {}
        self.expanding = ""  # the node whose graph converter's graph is being converted
        #: op key -> nodes touching a complex value that no complex converter converts
        self.complex_refused: Counter = Counter()
        #: a copy_ into slices of a fresh tensor -> (its scatter graph, the tensor)
        self.slice_writes: dict[Any, tuple[Any, Any]] = {}

    def key_of(self, target) -> str:
        """The op key of ``target``, memoized (a node's target repeats)."""
        key = self._keys.get(target)
        if key is None:
            key = target_key(target)
            self._keys[target] = key
        return key

    def convert_graph(self, node) -> str | tuple[str, ...]:
        """Converts the graph planned for ``node`` in its place; returns its result names.

        Its placeholders are bound to the node's FX arguments in pytree leaf order.
        """
        import torch.utils._pytree as pytree

        sub = self.expansions[node]
        leaves = [a for a in pytree.tree_leaves((node.args, node.kwargs)) if isinstance(a, Node)]
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        for p, a in zip(placeholders, leaves):
            self.env[p] = self.env[a]
        g = self.g
        saved = g.node_prefix, g.current_metadata, self.expanding
        self.expanding = g.current_metadata.get("pkg.tonnx.fx_node", node.name)
        try:
            results = self.run_graph(sub)
        finally:
            g.node_prefix, g.current_metadata, self.expanding = saved
        mapped = self.map(results)
        if isinstance(mapped, (list, tuple)):
            return tuple("" if r is None else r for r in mapped)
        return mapped

    # -- the walk ------------------------------------------------------------------------------

    def run(self, ep) -> None:
        gm = ep.graph_module
        _plan.make_plan(self, gm)
        _io.bind_inputs(self, ep)
        _io.reserve_output_names(self, ep)
        results = self.run_graph(gm)
        _io.bind_outputs(self, ep, results)

    def run_graph(self, gm):
        plan = self.plan
        for position, node in enumerate(gm.graph.nodes):
            op = node.op
            if op == "call_function":
                cand = plan.get(node)
                if cand is not None:
                    self._convert(node, cand, position)
                else:
                    self._native(gm, node)
            elif op == "get_attr":
                self._get_attr(gm, node)
            elif op == "output":
                return node.args[0]
            elif op != "placeholder":
                raise UnsupportedError(f"FX node kind {op!r} ({node.format_node()}) is not supported.")
        return None

    def map(self, arg):
        """FX nodes in ``arg`` replaced by their values (FX's immutable lists become lists)."""
        if isinstance(arg, Node):
            return self.env[arg]
        if isinstance(arg, tuple):
            return tuple(self.map(a) for a in arg)
        if isinstance(arg, list):
            return [self.map(a) for a in arg]
        if isinstance(arg, dict):
            return {k: self.map(v) for k, v in arg.items()}
        return arg

    def _convert(self, node, cand, position: int) -> None:
        g = self.g
        info = self.namer.info(node)
        outputs = self.output_names_of(node, info)
        args = self.map(node.args)
        kwargs = self.map(node.kwargs) if node.kwargs else {}
        g.node_prefix = node.name
        g.current_metadata = self._metadata(node, cand)
        g.debug_context["fx node"] = node
        g.debug_context["position"] = position
        if node in self.expansions:
            info._convert_graph = lambda: self.convert_graph(node)
        outer, g.op_start = g.op_start, len(g.nodes)  # an expansion converts nested nodes
        start = g.op_start
        try:
            function = self._functions.get(cand)
            if function is None:
                function = self._functions[cand] = as_converter(cand.converter.function)
            result = function(g, info, outputs, *args, **kwargs)
        except Exception as e:
            raise self.failure(node, cand, e) from e
        self._bind(node, info, outputs, result, cand, start)
        g.op_start = outer
        if cand.fallback:
            self.fallback_ops[f"{self.key_of(node.target)} ({cand.pack})"] += 1
        written = self._written.get(node.target)
        if written is None:
            written = _mutations.written_arguments(node.target)
            self._written[node.target] = written
        if written:
            value = self.env[node]
            for i, returned in written:
                lost = _mutations.lost_write(node, i)
                if lost:
                    raise ConversionError(f"FX node {node.format_node()} {lost}")
                if returned is not None:
                    self.env[node.args[i]] = value if type(value) is str else value[returned]

    def failure(self, node, cand, error: Exception) -> Exception:
        where = (
            f"while converting FX node {node.format_node()} with {cand.describe()}: "
            f"{type(error).__name__}: {error}"
        )
        if isinstance(error, UnsupportedError):
            return UnsupportedError(f"{error}\n(raised {where})")
        if isinstance(error, TonnxError) and "--DEBUG--" in str(error):
            return ConversionError(f"Conversion failed {where}")
        return ConversionError(f"Conversion failed {where}{self.g.get_debug_msg()}")

    def output_names_of(self, node, info: ResultInfo) -> list[str]:
        val = node.meta.get("val")
        unique = self.g.unique_name
        if not isinstance(val, (tuple, list)):
            return [unique(node.name)] if val is not None or info.dtypes else []
        names = [""] * len(val)
        used_whole = False
        for user in node.users:
            if user.target is operator.getitem and type(user.args[1]) is int:
                if not user.users:
                    continue  # torch.export leaves getitems nobody reads
                if not names[user.args[1]]:
                    names[user.args[1]] = unique(user.name)
            else:
                used_whole = True
        if used_whole:
            for i, v in enumerate(val):
                if not names[i] and v is not None:
                    names[i] = unique(f"{node.name}_{i}")
        return names

    def _bind(self, node, info: ResultInfo, outputs: list[str], result, cand, start: int = -1) -> None:
        if result is None:
            results: tuple = ()
        elif type(result) is str:
            results = (result,)
        elif isinstance(result, (tuple, list)) and all(type(r) is str or r is None for r in result):
            results = tuple(r or "" for r in result)
        else:
            raise ConverterOutputError(
                f"{cand.describe()} returned {result!r} ({type(result).__name__}) for FX node "
                f"{node.name!r} ({self.key_of(node.target)}): a converter returns the name of its "
                f"result, a str (or a tuple of names, one per output)."
            )
        unknown = [r for r in results if r and not self.g.has_name(r)]
        if unknown:
            raise ConverterOutputError(
                f"{cand.describe()} returned {unknown[0]!r} for FX node {node.name!r} "
                f"({self.key_of(node.target)}), a name no node, input or constant of the graph "
                f"defines: return what g.op.<Op>(..., outputs=outputs) returned."
            )
        if len(results) != len(outputs):
            raise ConverterOutputError(
                f"{cand.describe()} returned {len(results)} result(s) {list(results)} for "
                f"FX node {node.name!r} ({self.key_of(node.target)}), which has "
                f"{len(outputs)} output(s) {outputs}. A converter returns one name per "
                f"output the interpreter asks for ('' for an unused optional output)."
            )
        g = self.g
        for name, expected, dtype, shape in zip(results, outputs, info.dtypes, info.shapes):
            if not expected:
                continue
            if not name:
                raise ConverterOutputError(
                    f"{cand.describe()} returned no result for output {expected!r} of "
                    f"{node.name!r}, which the graph uses."
                )
            if name != expected and start >= 0:
                self._check_alias(node, cand, name, expected, start)
            if dtype is None:
                continue
            dtype, shape = represented(dtype, shape)
            known = g.types.get(name) if name in g.results else g.get_type(name)
            if known is not None and known != dtype:
                raise ConversionError(
                    f"{cand.describe()} produced {name!r} with ONNX type {known} for FX node "
                    f"{node.format_node()}, torch says {dtype}: the converter must compute in "
                    f"the dtype torch uses (sts.dtypes).{g.get_debug_msg()}"
                )
            if name == expected or name in g.results:
                g.types[name] = dtype
                g.shapes[name] = shape
        self.env[node] = results[0] if len(outputs) == 1 and type(node.meta.get("val")) not in (tuple, list) else results

    def _check_alias(self, node, cand, name: str, expected: str, start: int) -> None:
        """A result other than the one asked for must be an alias (an input, a constant).

        The outputs contract: a node the converter added is named after ``outputs``, so the
        ONNX graph reads like the FX graph and the interpreter types what it asked for.
        """
        for added in self.g.nodes[start:]:
            if name in added.outputs:
                raise ConverterOutputError(
                    f"{cand.describe()} returned {name!r}, made by its {added.op_type} node, "
                    f"for output {expected!r} of FX node {node.name!r}: pass outputs=outputs "
                    f"to the node that makes the result, or return "
                    f"tonnx.converters.named(g, result, outputs[i])."
                )

    def _metadata(self, node, cand) -> dict[str, str]:
        label = self._labels.get(cand)
        if label is None:
            label = f"{cand.pack}:{cand.converter.qualified_name}"
            self._labels[cand] = label
        meta = node.meta
        stack = meta.get("nn_module_stack")
        namespace = ""
        if stack:
            path, cls = next(reversed(stack.values()))
            namespace = f"{path}: {getattr(cls, '__name__', cls)}"
        metadata = {
            "namespace": namespace,
            "pkg.tonnx.fx_node": f"{node.name}: {self.key_of(node.target)}",
            "pkg.tonnx.converter": label,
        }
        if self.expanding:
            metadata["pkg.tonnx.expanded_from"] = self.expanding
        trace = meta.get("stack_trace")
        if trace:
            metadata["pkg.tonnx.stack_trace"] = trace
        return metadata

    # -- nodes the interpreter handles itself ---------------------------------------------------

    def _native(self, gm, node) -> None:
        target = node.target
        if node in self.slice_writes:
            _slice_writes.write_slices(self, node)
            return
        if target is operator.getitem:
            self.env[node] = self.env[node.args[0]][node.args[1]]
            return
        if target in self.no_ops:
            return
        handler = self.symbolic.get(target)
        if handler is not None:
            self._symbolic_node(node, handler)
            return
        control = self.higher_order.get(target)
        if control is None:
            raise UnsupportedError(f"No handler for FX node {node.format_node()}.")
        control(self, gm, node)

    def _symbolic_node(self, node, handler) -> None:
        g = self.g
        info = self.namer.info(node)
        out = g.unique_name(node.name)
        g.node_prefix = node.name
        g.current_metadata = {"pkg.tonnx.fx_node": f"{node.name}: {self.key_of(node.target)}"}
        g.debug_context["fx node"] = node
        args = self.map(node.args)
        if complex_values(node):
            args = _complex.complex_size_args(node, args, self.key_of(node.target))
        name = handler(g, out, *args)
        if info.dtypes and info.dtypes[0] is not None and name in g.results:
            g.types[name] = info.dtypes[0]
            g.shapes[name] = ()
        self.env[node] = name

    def _get_attr(self, gm, node) -> None:
        value = getattr(gm, node.target)
        if hasattr(value, "graph"):
            self.env[node] = value
            return
        self.env[node] = self.g.make_initializer(node.target, _complex.pairs(value), dedup=False)
