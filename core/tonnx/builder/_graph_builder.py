"""GraphBuilder: names, types, shapes, constants and nodes of the ONNX graph being built."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tonnx._errors import TonnxError
from tonnx.builder import (
    _constants,
    _cse,
    _debug,
    _folding,
    _passes,
    _peephole,
    _proto,
    _type_inference,
)
from tonnx.builder._node import Node
from tonnx.builder._shortcut import OpShortcut

#: Shape of a result: ints for static dimensions, strings for symbolic ones.
Shape = tuple  # tuple[int | str, ...]



class GraphBuilder:
    """Container of the ONNX graph under construction.

    Converters receive it as ``g`` and add nodes with ``g.op.<OpType>(...)`` or
    :meth:`make_node`. It tracks, for every result, its element type and (when known) its
    shape, with symbolic dimensions as strings; it stores constants as numpy arrays or
    torch tensors until :meth:`to_onnx` so that weights are copied once, when serialized.
    """

    def __init__(
        self,
        target_opset: int | dict[str, int] = 18,
        *,
        ir_version: int | None = None,
        parent: GraphBuilder | None = None,
    ):
        opsets = {"": target_opset} if isinstance(target_opset, int) else dict(target_opset)
        opsets.setdefault("", 18)
        self.opsets: dict[str, int] = opsets
        self.main_opset: int = opsets[""]
        self.ir_version = ir_version
        self.parent = parent
        # Names are unique across a graph and all its subgraphs (no shadowing in ONNX).
        self._name_counters: dict[str, int] = parent._name_counters if parent else {}
        self._node_name_counters: dict[str, int] = parent._node_name_counters if parent else {}
        #: every result defined in this graph (inputs, constants, node outputs)
        self.results: set[str] = set()
        self.types: dict[str, int] = {}
        self.shapes: dict[str, Shape] = {}
        #: initializers and folded results: name -> numpy array or torch tensor
        self.constants: dict[str, Any] = {}
        self._small_constants: dict[tuple, str] = {}
        #: initializers computed from others when the model is written (builder/_derived.py)
        self.derivations: dict[str, Any] = parent.derivations if parent else {}
        #: every derived initializer's sources, computed at once or not: a later rule (a
        #: quantizer) may need to know which model weight a rewritten copy came from
        self.derived_from: dict[str, tuple[str, ...]] = parent.derived_from if parent else {}
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.nodes: list[Node] = []
        #: metadata attached to every node added; the interpreter sets it per FX node
        self.current_metadata: dict[str, str] | None = None
        #: prefix of node names, usually the converter's op, so a node leads back to it
        self.node_prefix: str = "n"
        #: index in ``nodes`` of the first node of the op being converted (the interpreter
        #: sets it): a converter may rename only the nodes it added
        self.op_start: int = 0
        #: what the interpreter is doing, quoted by get_debug_msg
        self.debug_context: dict[str, Any] = {}
        self.metadata_props: dict[str, str] = {}
        #: local functions of the model, (domain, name) -> the builder of the body; shared by
        #: the main graph, its subgraphs and the functions (one table per model)
        self.functions: dict[tuple[str, str], GraphBuilder] = parent.functions if parent else {}
        #: (domain, name) when this builder holds a function's body (no initializers there)
        self.function_key: tuple[str, str] | None = None
        if parent is not None:
            self.opsets = parent.opsets  # a domain declared in a subgraph is the model's
        self.op = OpShortcut(self)

    # -- names ------------------------------------------------------------------------------

    def unique_name(self, prefix: str) -> str:
        """A result name not used anywhere in this graph or its parents/subgraphs."""
        return _take_unique(self._name_counters, prefix)

    def _claim(self, name: str) -> str:
        """Takes ``name`` for a new result; it may come from unique_name but not be defined."""
        if name in self.results:
            raise TonnxError(f"Result {name!r} is defined twice.{self.get_debug_msg()}")
        self._name_counters.setdefault(name, 1)
        self.results.add(name)
        return name

    def _unique_node_name(self, prefix: str) -> str:
        return _take_unique(self._node_name_counters, prefix)

    def has_name(self, name: str) -> bool:
        """True if ``name`` is a known result here or in an enclosing graph."""
        g = self
        while g is not None:
            if name in g.results:
                return True
            g = g.parent
        return False

    # -- types and shapes -----------------------------------------------------------------------

    def set_type(self, name: str, elem_type: int) -> None:
        self.types[name] = elem_type

    def get_type(self, name: str) -> int:
        """ONNX element type of ``name``; every result has one."""
        g = self
        while g is not None:
            found = g.types.get(name)
            if found is not None:
                return found
            g = g.parent
        raise TonnxError(f"Type of {name!r} is unknown.{self.get_debug_msg()}")

    def has_type(self, name: str) -> bool:
        return name in self.types or (self.parent is not None and self.parent.has_type(name))

    def set_shape(self, name: str, shape: Shape) -> None:
        self.shapes[name] = shape

    def get_shape(self, name: str) -> Shape | None:
        """Shape of ``name`` (ints and symbolic strings), None when unknown."""
        g = self
        while g is not None:
            found = g.shapes.get(name)
            if found is not None:
                return found
            g = g.parent
        return None

    def get_rank(self, name: str) -> int:
        shape = self.get_shape(name)
        if shape is None:
            raise TonnxError(f"Rank of {name!r} is unknown.{self.get_debug_msg()}")
        return len(shape)

    def has_shape(self, name: str) -> bool:
        return self.get_shape(name) is not None

    # -- constants ------------------------------------------------------------------------------

    def initializer(self, name: str) -> Any:
        """The value of initializer ``name`` here or in an enclosing graph (data, or a
        ``meta`` placeholder the writer reads later); None when it is not one."""
        g = self
        while g is not None:
            if name in g.constants:
                return g.constants[name]
            g = g.parent
        return None

    def is_constant(self, name: str) -> bool:
        # a 'meta' tensor has no value to fold or read: a runtime operand
        value = self.initializer(name)
        return value is not None and _constants.has_data(value)

    def is_initializer(self, name: str) -> bool:
        """An initializer, holding data or a ``meta`` placeholder the writer reads later (a
        weight streamed from a checkpoint): what a rewrite may derive a new weight from."""
        return self.initializer(name) is not None

    def get_constant(self, name: str) -> np.ndarray:
        """Value of a constant result as a numpy array (a view, never a copy of weights)."""
        value = self.initializer(name)
        if value is None:
            raise TonnxError(f"{name!r} is not a constant.{self.get_debug_msg()}")
        return _constants.as_numpy(value)

    def is_zero_constant(self, name: str, max_elements: int | None = _folding.EAGER_MAX_ELEMENTS) -> bool:
        """True for a constant whose elements are all zero (a bias or a state that adds
        nothing); constants above ``max_elements`` are not scanned and say False."""
        if not self.is_constant(name):
            return False
        value = self.get_constant(name)
        if max_elements is not None and value.size > max_elements:
            return False
        return not np.any(value)

    def make_initializer(self, name: str, value: Any, *, dedup: bool = True) -> str:
        """Adds an initializer; small values equal to an existing one share its name.

        ``value`` is a numpy array, a torch tensor or a python scalar/list (converted to
        numpy). Large tensors are stored as given, serialized only by :meth:`to_onnx`.
        """
        value = _constants.normalize(value)
        key = _constants.dedup_key(value) if dedup else None
        # the one a pass removed since (remove_unused) is not shared: it is made again
        existing = None if key is None else self._small_constants.get(key)
        if existing is not None and existing not in self.constants:
            existing = None
        if existing is not None and not name:
            return existing
        name = self._claim(name) if name else self._claim(self.unique_name(_constants.auto_name(value)))
        self.constants[name] = value
        self.types[name] = _constants.elem_type(value)
        self.shapes[name] = tuple(value.shape)
        if key is not None and existing is None:
            self._small_constants[key] = name
        return name

    def make_derived_initializer(self, sources: Sequence[str], compute, shape: tuple[int, ...], dtype) -> str:
        """A new initializer ``compute(*values of sources)`` (numpy arrays in, one out) of
        ``shape`` and torch ``dtype``; for weights on ``meta``, computed as the file is
        written (see builder/_derived.py)."""
        from tonnx.builder._derived import derive

        return derive(self, list(sources), compute, tuple(shape), dtype)

    # -- inputs and outputs -------------------------------------------------------------------

    def make_tensor_input(self, name: str, elem_type: int, shape: Shape | None) -> str:
        """Adds a graph input of type ``elem_type``; ``shape`` may hold symbolic strings."""
        name = self._claim(name)
        self.inputs.append(name)
        self.types[name] = elem_type
        if shape is not None:
            self.shapes[name] = tuple(shape)
        return name

    def make_tensor_output(
        self, name: str, elem_type: int | None = None, shape: Shape | None = None
    ) -> str:
        """Declares ``name`` as a graph output, with its type and shape when given."""
        if not self.has_name(name):
            raise TonnxError(f"Output {name!r} is not a known result.{self.get_debug_msg()}")
        if elem_type is not None:
            self.types[name] = elem_type
        if shape is not None:
            self.shapes[name] = tuple(shape)
        self.outputs.append(name)
        return name

    # -- nodes ----------------------------------------------------------------------------------

    def make_node(
        self,
        op_type: str,
        inputs: Sequence[str],
        outputs: int | Sequence[str] = 1,
        *,
        domain: str = "",
        name: str | None = None,
        **attributes: Any,
    ) -> str | tuple[str, ...]:
        """Adds a node; returns its output name, or a tuple of names for several outputs.

        ``outputs`` is a number of outputs (names are generated from the op type) or the
        exact names wanted (``""`` for an optional output left out). A node whose inputs are
        all small constants is folded into a constant when the op is cheap to evaluate.
        """
        inputs = list(inputs)
        while inputs and not inputs[-1]:
            inputs.pop()  # trailing omitted optional inputs are left out, not named ""
        for i in inputs:
            if i and not self.has_name(i):
                raise TonnxError(
                    f"Input {i!r} of {op_type} does not exist, inputs={inputs}."
                    f"{self.get_debug_msg()}"
                )
        if domain and domain not in self.opsets:
            raise TonnxError(
                f"Domain {domain!r} of {op_type} has no declared version; "
                f"call g.add_domain({domain!r}, version) first."
            )
        prefix = name or self.node_prefix
        if isinstance(outputs, int):
            base = f"{prefix}_{op_type.lower()}" if name else op_type.lower()
            output_names = [self._claim(self.unique_name(base)) for _ in range(outputs)]
        else:
            output_names = [self._claim(o) if o else "" for o in outputs]
        if not domain and _folding.can_fold(self, op_type, inputs):
            folded = _folding.fold(self, op_type, inputs, attributes)
            if folded is not None:
                return self._store_folded(output_names, folded)
        node = Node(
            op_type,
            inputs,
            output_names,
            attributes,
            domain,
            self._unique_node_name(prefix),
            self.current_metadata,
        )
        self.nodes.append(node)
        _type_inference.infer_types(self, node)
        return output_names[0] if len(output_names) == 1 else tuple(output_names)

    def _store_folded(self, output_names: list[str], values: list[np.ndarray]):
        for out, value in zip(output_names, values):
            value = np.asarray(value)
            self.constants[out] = value
            self.types[out] = _constants.elem_type(value)
            self.shapes[out] = tuple(value.shape)
        return output_names[0] if len(output_names) == 1 else tuple(output_names)

    def make_nodes(
        self,
        function: Any,
        inputs: Sequence[str],
        outputs: Sequence[str],
        *,
        prefix: str = "",
    ) -> tuple[str, ...]:
        """Inlines the body of an ``onnx.FunctionProto`` (an onnxscript function, say).

        Intermediate results are renamed with ``prefix`` so they cannot collide; the
        function's inputs and outputs are bound to ``inputs`` and ``outputs``.
        """
        from tonnx.builder._inline import inline_function

        return inline_function(self, function, list(inputs), list(outputs), prefix=prefix)

    def add_domain(self, domain: str, version: int) -> None:
        """Declares a custom domain used by some nodes (``com.microsoft``, a company's)."""
        known = self.opsets.get(domain)
        if known is not None and known != version:
            raise TonnxError(f"Domain {domain!r} is declared with versions {known} and {version}.")
        self.opsets[domain] = version

    def make_subgraph(self) -> GraphBuilder:
        """A builder for a subgraph (If branch, Loop body) that can read this graph's results."""
        return GraphBuilder(self.opsets, ir_version=self.ir_version, parent=self)

    def make_function(self, domain: str, name: str) -> GraphBuilder:
        """A builder for the body of a new local function ``domain.name`` of the model.

        The body reads only its inputs (no outer scope); its constants become ``Constant``
        nodes when written. Call it with ``g.make_node(name, inputs, n, domain=domain)``.
        """
        if (domain, name) in self.functions:
            raise TonnxError(f"Function {domain}.{name} is defined twice.")
        body = GraphBuilder(self.opsets, ir_version=self.ir_version)
        body.opsets = self.opsets
        body.functions = self.functions
        body.function_key = (domain, name)
        self.functions[(domain, name)] = body
        if domain not in self.opsets:
            self.add_domain(domain, 1)
        return body

    # -- passes and output ----------------------------------------------------------------------

    def remove_identity_nodes(self) -> int:
        """Removes Identity nodes by renaming; returns how many were removed."""
        return _passes.remove_identity_nodes(self)

    def remove_unused(self) -> int:
        """Removes nodes and initializers no output depends on; returns the count removed."""
        return _passes.remove_unused(self)

    def constant_folding(self) -> int:
        """Folds nodes whose inputs are all constants (cheap ops only); returns the count."""
        return _passes.constant_folding(self)

    def derive_weight_transposes(self) -> int:
        """Transposes of streamed weights stored transposed (derived at write time); the count."""
        return _passes.derive_weight_transposes(self)

    def eliminate_common_subexpressions(self) -> int:
        """Keeps one node per distinct (op, inputs, attributes); returns the count removed."""
        return _cse.eliminate_common_subexpressions(self)

    def rewrite_peepholes(self) -> int:
        """Local rewrites into the patterns runtimes fuse; returns how many fired."""
        return _peephole.rewrite_peepholes(self)

    def optimize(self) -> None:
        """The basic passes, in the order that lets each help the next (the main graph
        also optimizes the bodies of the model's local functions)."""
        if self.parent is None and self.function_key is None:
            for body in self.functions.values():
                body.optimize()
        self.constant_folding()
        self.remove_identity_nodes()  # converters' Identity nodes would hide patterns
        self.rewrite_peepholes()
        self.remove_identity_nodes()  # the peepholes' own
        self.eliminate_common_subexpressions()
        self.remove_unused()

    def to_onnx(self, *, external_data=None, doc_string: str = ""):
        """The ``onnx.ModelProto``; initializers are serialized here, each copied once.

        ``external_data`` (an ``ExternalDataWriter``) receives the large initializers.
        """
        return _proto.to_model_proto(self, external_data=external_data, doc_string=doc_string)

    def get_debug_msg(self) -> str:
        """State of the builder quoted by every error raised during conversion."""
        return _debug.debug_message(self)


def _take_unique(counters: dict[str, int], prefix: str) -> str:
    """``prefix`` or ``prefix_<n>``, whichever is free in ``counters``; marks it taken.

    ``counters[prefix]`` remembers the next suffix to try, so taking many names with the
    same prefix stays linear.
    """
    count = counters.get(prefix)
    if count is None:
        counters[prefix] = 1
        return prefix
    while True:
        candidate = f"{prefix}_{count}"
        count += 1
        if candidate not in counters:
            counters[prefix] = count
            counters[candidate] = 1
            return candidate
