"""Interpreter: walks the FX graph of an ExportedProgram and fills a GraphBuilder."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from typing import Any

from torch.fx import Node

from .._errors import (
    ConversionError,
    ConverterOutputError,
    TonnxError,
    UnsupportedError,
)
from .._script_converter import as_converter
from ..dispatch._converter import target_key
from . import _higher_order, _mutations, _slice_writes, _symbolic
from ._values import ResultInfo, ShapeNamer, complex_values, represented


#: torch.export output kinds carrying the new value of a tensor forward writes to
MUTATION_KINDS = ("BUFFER_MUTATION", "PARAMETER_MUTATION", "USER_INPUT_MUTATION")


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
        self._symbolic = _symbolic.handlers()
        self._no_ops = _symbolic.no_op_targets()
        self._higher_order = _higher_order.targets()
        self._keys: dict[Any, str] = {}
        self._labels: dict[Any, str] = {}
        self._written: dict[Any, tuple[int, ...]] = {}
        #: candidate -> what to call: its function, or an adapter (an onnxscript function)
        self._functions: dict[Any, Callable] = {}
        #: one export's memo for graph converters (``expand``), e.g. traced decompositions
        self.cache: dict[Any, Any] = {}
        self._expansions: dict[Any, Any] = {}
        self._expanding = ""  # the node whose graph converter's graph is being converted
        #: op key -> nodes touching a complex value that no complex converter converts
        self.complex_refused: Counter = Counter()
        #: a copy_ into slices of a fresh tensor -> (its scatter graph, the tensor)
        self._slice_writes: dict[Any, tuple[Any, Any]] = {}

    # -- planning ------------------------------------------------------------------------------

    def _key(self, target) -> str:
        key = self._keys.get(target)
        if key is None:
            key = target_key(target)
            self._keys[target] = key
        return key

    def make_plan(self, gm) -> None:
        """Resolves every node's converter; raises once for all ops without one."""
        missing: Counter = Counter()
        self.complex_refused.clear()
        self._plan_graph(gm, missing)
        if missing:
            raise self.on_missing(dict(missing))
        if self.complex_refused:
            raise _complex_error(self.complex_refused)

    def _plan_graph(self, gm, missing: Counter) -> None:
        for node in gm.graph.nodes:
            if node.op != "call_function":
                continue
            target = node.target
            if target is operator.getitem or target in self._symbolic or target in self._no_ops:
                continue
            if target in self._higher_order:
                for sub in self._subgraphs(gm, node):
                    self._plan_graph(sub, missing)
                continue
            chain = _mutations.slice_write(node)
            if chain is not None:
                sub = _slice_writes.scatter_graph(node, chain)
                self._slice_writes[node] = (sub, chain[0])
                self._plan_graph(sub, missing)
                continue
            key = self._key(target)
            cand = self._resolve(key, node)
            if cand is None:
                missing[key] += 1
            elif cand is not False:
                self.plan[node] = cand
                if hasattr(cand.converter.function, "expand"):
                    self._plan_expansion(node, cand, missing)

    def _resolve(self, key: str, node):
        """The node's converter, None when there is none, False when refused for complex.

        A node reading or making a complex value takes a ``complex=True`` converter, or a
        graph converter (complex-transparent: its graph is planned like this one); one that
        only a real converter would convert is recorded in ``complex_refused``.
        """
        touched = complex_values(node)
        if not touched:
            return self.registry.resolve(key, node)
        cand = self.registry.resolve(key, node, complex=True)
        if cand is None:
            cand = self.registry.resolve(key, node)
            if cand is not None and not hasattr(cand.converter.function, "expand"):
                cand = False
        if cand is False or (cand is not None and _has_complex32(touched)):
            self.complex_refused[(key, _complex_role(node))] += 1
            return False
        return cand

    def _plan_expansion(self, node, cand, missing: Counter) -> None:
        """Plans the FX graph a graph converter lowers ``node`` into, with the other nodes.

        A converter whose function has ``expand(args, kwargs, cache)`` (arguments as
        torch's meta values) converts by emitting that graph (``convert_graph``); planning
        it here reports the ops it reaches without converter with every other missing op.
        """
        args, kwargs = _meta_values(node.args), _meta_values(node.kwargs)
        try:
            sub = cand.converter.function.expand(args, kwargs, self.cache)
        except Exception as e:
            raise self._failure(node, cand, e) from e
        first = not any(s is sub for s in self._expansions.values())
        self._expansions[node] = sub
        if first:
            self._plan_graph(sub, missing)

    def convert_graph(self, node) -> str | tuple[str, ...]:
        """Converts the graph planned for ``node`` in its place; returns its result names.

        Its placeholders are bound to the node's FX arguments in pytree leaf order.
        """
        import torch.utils._pytree as pytree

        sub = self._expansions[node]
        leaves = [a for a in pytree.tree_leaves((node.args, node.kwargs)) if isinstance(a, Node)]
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        for p, a in zip(placeholders, leaves):
            self.env[p] = self.env[a]
        g = self.g
        saved = g.node_prefix, g.current_metadata, self._expanding
        self._expanding = g.current_metadata.get("pkg.tonnx.fx_node", node.name)
        try:
            results = self._run_graph(sub)
        finally:
            g.node_prefix, g.current_metadata, self._expanding = saved
        mapped = self._map(results)
        if isinstance(mapped, (list, tuple)):
            return tuple("" if r is None else r for r in mapped)
        return mapped

    def _subgraphs(self, gm, node) -> list:
        return [getattr(gm, a.target) for a in node.args if getattr(a, "op", None) == "get_attr"]

    # -- the walk ------------------------------------------------------------------------------

    def run(self, ep) -> None:
        gm = ep.graph_module
        self.make_plan(gm)
        self._inputs(ep)
        self._reserve_output_names(ep)
        results = self._run_graph(gm)
        self._outputs(ep, results)

    def _run_graph(self, gm):
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

    def _map(self, arg):
        """FX nodes in ``arg`` replaced by their values (FX's immutable lists become lists)."""
        if isinstance(arg, Node):
            return self.env[arg]
        if isinstance(arg, tuple):
            return tuple(self._map(a) for a in arg)
        if isinstance(arg, list):
            return [self._map(a) for a in arg]
        if isinstance(arg, dict):
            return {k: self._map(v) for k, v in arg.items()}
        return arg

    def _convert(self, node, cand, position: int) -> None:
        g = self.g
        info = self.namer.info(node)
        outputs = self._output_names(node, info)
        args = self._map(node.args)
        kwargs = self._map(node.kwargs) if node.kwargs else {}
        g.node_prefix = node.name
        g.current_metadata = self._metadata(node, cand)
        g.debug_context["fx node"] = node
        g.debug_context["position"] = position
        if node in self._expansions:
            info._convert_graph = lambda: self.convert_graph(node)
        outer, g.op_start = g.op_start, len(g.nodes)  # an expansion converts nested nodes
        start = g.op_start
        try:
            function = self._functions.get(cand)
            if function is None:
                function = self._functions[cand] = as_converter(cand.converter.function)
            result = function(g, info, outputs, *args, **kwargs)
        except Exception as e:
            raise self._failure(node, cand, e) from e
        self._bind(node, info, outputs, result, cand, start)
        g.op_start = outer
        if cand.fallback:
            self.fallback_ops[f"{self._key(node.target)} ({cand.pack})"] += 1
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

    def _failure(self, node, cand, error: Exception) -> Exception:
        where = (
            f"while converting FX node {node.format_node()} with {cand.describe()}: "
            f"{type(error).__name__}: {error}"
        )
        if isinstance(error, UnsupportedError):
            return UnsupportedError(f"{error}\n(raised {where})")
        if isinstance(error, TonnxError) and "--DEBUG--" in str(error):
            return ConversionError(f"Conversion failed {where}")
        return ConversionError(f"Conversion failed {where}{self.g.get_debug_msg()}")

    def _output_names(self, node, info: ResultInfo) -> list[str]:
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
                f"{node.name!r} ({self._key(node.target)}): a converter returns the name of its "
                f"result, a str (or a tuple of names, one per output)."
            )
        unknown = [r for r in results if r and not self.g.has_name(r)]
        if unknown:
            raise ConverterOutputError(
                f"{cand.describe()} returned {unknown[0]!r} for FX node {node.name!r} "
                f"({self._key(node.target)}), a name no node, input or constant of the graph "
                f"defines: return what g.op.<Op>(..., outputs=outputs) returned."
            )
        if len(results) != len(outputs):
            raise ConverterOutputError(
                f"{cand.describe()} returned {len(results)} result(s) {list(results)} for "
                f"FX node {node.name!r} ({self._key(node.target)}), which has "
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
            "pkg.tonnx.fx_node": f"{node.name}: {self._key(node.target)}",
            "pkg.tonnx.converter": label,
        }
        if self._expanding:
            metadata["pkg.tonnx.expanded_from"] = self._expanding
        trace = meta.get("stack_trace")
        if trace:
            metadata["pkg.tonnx.stack_trace"] = trace
        return metadata

    # -- nodes the interpreter handles itself ---------------------------------------------------

    def _write_slices(self, node) -> None:
        """``node`` (a ``copy_`` into slices of a fresh tensor) rebinds that tensor to the
        converted scatter graph's result."""
        sub, base = self._slice_writes[node]
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        self.env[placeholders[0]] = self.env[base]
        self.env[placeholders[1]] = self.env[node.args[1]]
        g = self.g
        saved = g.node_prefix, g.current_metadata, self._expanding
        self._expanding = f"{node.name}: {self._key(node.target)}"
        try:
            self.env[base] = self._map(self._run_graph(sub))
        finally:
            g.node_prefix, g.current_metadata, self._expanding = saved

    def _native(self, gm, node) -> None:
        target = node.target
        if node in self._slice_writes:
            self._write_slices(node)
            return
        if target is operator.getitem:
            self.env[node] = self.env[node.args[0]][node.args[1]]
            return
        if target in self._no_ops:
            return
        handler = self._symbolic.get(target)
        if handler is not None:
            self._symbolic_node(node, handler)
            return
        method = self._higher_order.get(target)
        if method is None:
            raise UnsupportedError(f"No handler for FX node {node.format_node()}.")
        getattr(self, method)(gm, node)

    def _symbolic_node(self, node, handler) -> None:
        g = self.g
        info = self.namer.info(node)
        out = g.unique_name(node.name)
        g.node_prefix = node.name
        g.current_metadata = {"pkg.tonnx.fx_node": f"{node.name}: {self._key(node.target)}"}
        g.debug_context["fx node"] = node
        args = self._map(node.args)
        if complex_values(node):
            args = self._complex_size_args(node, args)
        name = handler(g, out, *args)
        if info.dtypes and info.dtypes[0] is not None and name in g.results:
            g.types[name] = info.dtypes[0]
            g.shapes[name] = ()
        self.env[node] = name

    def _complex_size_args(self, node, args: list) -> list:
        """``sym_size(x, dim)`` of a complex ``x``: a negative dim counts from torch's last
        axis, before the pair axis of its [..., 2] tensor."""
        import torch

        if node.target is not torch.ops.aten.sym_size.int:
            raise UnsupportedError(
                f"complex input not supported by {self._key(node.target)} ({node.format_node()})."
            )
        x, dim = args
        return [x, dim % node.args[0].meta["val"].dim()]

    def _get_attr(self, gm, node) -> None:
        value = getattr(gm, node.target)
        if hasattr(value, "graph"):
            self.env[node] = value
            return
        self.env[node] = self.g.make_initializer(node.target, _pairs(value), dedup=False)

    def _inline(self, gm, node, sub_node, operands) -> None:
        sub = getattr(gm, sub_node.target)
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        for p, a in zip(placeholders, operands):
            self.env[p] = self._map(a)
        results = self._run_graph(sub)
        self.env[node] = tuple(self._map(r) for r in results)

    def _inline_set_grad(self, gm, node) -> None:
        sub_node, operands = _higher_order.submodule_args(node)
        self._inline(gm, node, sub_node, operands)

    def _inline_autocast(self, gm, node) -> None:
        # the ops inside carry the dtypes autocast chose; converters compute in those
        sub_node, operands = _higher_order.submodule_args(node)
        self._inline(gm, node, sub_node, operands)

    def _convert_cond(self, gm, node) -> None:
        pred, true_node, false_node, operands = node.args
        info = self.namer.info(node)
        outputs = self._output_names(node, info)
        outputs = [o or self.g.unique_name(f"{node.name}_unused") for o in outputs]
        parent = self.g
        branches = []
        for branch in (true_node, false_node):
            sub = getattr(gm, branch.target)
            sg = parent.make_subgraph()
            self.g = sg
            try:
                placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
                for p, a in zip(placeholders, operands):
                    self.env[p] = self._map(a)
                results = self._run_graph(sub)
                for r, dtype, shape in zip(results, info.dtypes, info.shapes):
                    out = sg.op.Identity(self._map(r))
                    sg.make_tensor_output(out, *represented(dtype, shape))
            finally:
                self.g = parent
            branches.append(sg)
        parent.node_prefix = node.name
        names = parent.make_node(
            "If", [self._map(pred)], outputs, then_branch=branches[0], else_branch=branches[1]
        )
        names = (names,) if type(names) is str else names
        for name, dtype, shape in zip(names, info.dtypes, info.shapes):
            parent.types[name], parent.shapes[name] = represented(dtype, shape)
        self.env[node] = tuple(names)

    # -- inputs and outputs ---------------------------------------------------------------------

    def _inputs(self, ep) -> None:
        g = self.g
        placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
        specs = ep.graph_signature.input_specs
        user = [p for p, s in zip(placeholders, specs) if s.kind.name == "USER_INPUT"]
        if len(self.input_names) > len(user):
            raise TonnxError(
                f"input_names has {len(self.input_names)} names but the model has "
                f"{len(user)} flattened inputs: {[p.name for p in user]}."
            )
        names = dict(zip(user, self.input_names))
        for node, spec in zip(placeholders, specs):
            kind = spec.kind.name
            if kind == "USER_INPUT":
                self._user_input(node, names.get(node, node.name))
            elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                value = ep.state_dict.get(spec.target)
                if value is None:
                    value = ep.constants[spec.target]
                self.env[node] = g.make_initializer(spec.target, _pairs(value), dedup=False)
            else:
                raise UnsupportedError(
                    f"Input {node.name!r} of kind {kind} (custom objects, effect tokens) "
                    f"cannot be exported to ONNX."
                )

    def _user_input(self, node, name: str) -> None:
        val = node.meta.get("val")
        if complex_values(node):
            raise UnsupportedError(
                f"Input {name!r} is a complex tensor ({val.dtype}): tonnx does not take complex "
                f"model inputs. Pass torch.view_as_real(x) and call torch.view_as_complex in "
                f"the model."
            )
        info = self.namer.info(node)
        if hasattr(val, "dtype") or type(val).__name__ in ("SymInt", "SymFloat", "SymBool"):
            self.env[node] = self.g.make_tensor_input(name, info.dtypes[0], info.shapes[0])
        else:
            # an int/float/None input torch.export specialized: its value is in the graph
            self.env[node] = val

    def _outputs(self, ep, results) -> None:
        g = self.g
        specs = ep.graph_signature.output_specs
        user_values = [r for r, s in zip(results, specs) if s.kind.name == "USER_OUTPUT"]
        mutations = [(r, s) for r, s in zip(results, specs) if s.kind.name in MUTATION_KINDS]
        others = sorted({s.kind.name for s in specs} - {"USER_OUTPUT", *MUTATION_KINDS})
        if others:
            raise UnsupportedError(
                f"The program has outputs of kind {others} (a joint training graph?): tonnx "
                f"exports inference programs, whose outputs are the model's and the new "
                f"values of what forward mutates."
            )
        if len(self.output_names) > len(user_values):
            raise TonnxError(
                f"output_names has {len(self.output_names)} names but the model has "
                f"{len(user_values)} flattened outputs."
            )
        seen: set[str] = set()
        for i, value in enumerate(user_values):
            if value is None:
                raise UnsupportedError(f"Output {i} of the model is None; ONNX has no None output.")
            if getattr(getattr(value, "meta", {}).get("val"), "is_complex", lambda: False)():
                raise UnsupportedError(
                    f"Output {i} of the model ({value.name!r}) is a complex tensor: tonnx does "
                    f"not make complex model outputs. Return torch.view_as_real(result) instead."
                )
            if not hasattr(value, "meta") and not isinstance(value, (int, float, bool)):
                raise UnsupportedError(
                    f"Output {i} of the model is the Python {type(value).__name__} {value!r}, "
                    f"not a tensor: ONNX outputs are tensors. Return torch.tensor(...) or leave "
                    f"it out of forward's result."
                )
            name = self._map(value)
            if type(name) is not str:
                name = g.make_initializer("", name)
            info = self.namer.info(value) if hasattr(value, "meta") else None
            wanted = self.output_names[i] if i < len(self.output_names) else None
            must_copy = name in seen or name in g.inputs or g.is_constant(name)
            if wanted and wanted != name:
                name = g.op.Identity(name, outputs=[wanted])
            elif must_copy:
                name = g.op.Identity(name, outputs=[g.unique_name(f"{name}_output")])
            seen.add(name)
            if info is not None and info.dtypes:
                g.make_tensor_output(name, info.dtypes[0], info.shapes[0])
            else:
                g.make_tensor_output(name, g.get_type(name), g.get_shape(name))
        for value, spec in mutations:
            self._mutation_output(ep, value, spec, seen)

    def _reserve_output_names(self, ep) -> None:
        """The model's output names are taken before any node is named, so that a result
        inside the graph never takes one (``output_names=["linear"]`` of a Linear model);
        a name an input or weight already has is refused."""
        out = next(n for n in reversed(ep.graph.nodes) if n.op == "output")
        specs = ep.graph_signature.output_specs
        values = [v for v, s in zip(out.args[0], specs) if s.kind.name == "USER_OUTPUT"]
        for i, (wanted, value) in enumerate(zip(self.output_names, values)):
            if not wanted or wanted == getattr(value, "name", None):
                continue  # that FX node is named so already: no copy needed
            if self.g.has_name(wanted):
                raise TonnxError(
                    f"output_names[{i}]={wanted!r} is already the name of an input or a "
                    f"weight of the model; choose another output name."
                )
            self.g.unique_name(wanted)

    def _mutation_output(self, ep, value, spec, seen: set[str]) -> None:
        """The new value of a buffer, parameter or input that forward writes to, as the
        output ``<its ONNX name>.updated``, after the model's outputs: ONNX has no state,
        and dropping the write would lose it silently."""
        g = self.g
        mutated = spec.target
        if spec.kind.name == "USER_INPUT_MUTATION":
            placeholder = next(n for n in ep.graph.nodes if n.op == "placeholder" and n.name == mutated)
            mutated = self.env[placeholder]
        name = self._map(value)
        info = self.namer.info(value)
        wanted = g.unique_name(f"{mutated}.updated")
        name = g.op.Identity(name, outputs=[wanted])
        seen.add(name)
        g.make_tensor_output(name, info.dtypes[0], info.shapes[0])


def _meta_values(arg):
    """``arg`` with each FX node replaced by torch's value of it (FakeTensor, SymInt)."""
    if isinstance(arg, Node):
        return arg.meta.get("val")
    if isinstance(arg, (list, tuple)):
        return type(arg)(_meta_values(a) for a in arg)
    if isinstance(arg, dict):
        return {k: _meta_values(v) for k, v in arg.items()}
    return arg


def _pairs(value):
    """A complex tensor as its real pairs [..., 2] (how complex values live in the graph)."""
    if getattr(value, "is_complex", None) is not None and value.is_complex():
        import torch

        return torch.view_as_real(value.detach().resolve_conj())
    return value


def _has_complex32(values) -> bool:
    import torch

    return any(v.dtype == torch.complex32 for v in values)


def _complex_role(node) -> str:
    """'input' when a tensor argument of ``node`` is complex, else 'result'."""
    for a in node.all_input_nodes:
        if getattr(a.meta.get("val"), "dtype", None) is not None and a.meta["val"].dtype.is_complex:
            return "input"
    return "result"


def _complex_error(refused: Counter) -> UnsupportedError:
    lines = [
        f"complex {role} not supported by {key} ({count} node{'s' if count > 1 else ''})"
        for (key, role), count in sorted(refused.items())
    ]
    return UnsupportedError(
        "\n".join(lines) + "\ntonnx carries complex values between converters as real "
        "tensors [..., 2] and converts an op touching one only with a converter registered "
        "with complex=True (complex64 and complex128; complex32 is not supported). Fix: keep "
        "this computation real (torch.view_as_real / torch.view_as_complex around it), or "
        "register a converter with tonnx.Converter(key, function, complex=True)."
    )
