"""FX meta values -> ONNX types and shapes, with symbolic dimensions named once."""

from __future__ import annotations

from typing import Any

from onnx import TensorProto

from tonnx.builder._dtypes import onnx_type_from_torch

_UNSET = object()


class ResultInfo:
    """What torch.export knows of an op call, passed to converters as ``sts``.

    ``dtypes``/``shapes`` hold one entry per output (None for a non-tensor output). The
    other properties describe the call (inputs, schema, in-place flag, module path); they are
    computed on first access, since most converters read none of them and one ResultInfo
    is built per FX node. Converters read these, never the FX node itself.
    """

    __slots__ = ("_node", "_namer", "dtypes", "shapes", "_values", "_schema", "_convert_graph")

    def __init__(self, node, dtypes: tuple, shapes: tuple, namer: ShapeNamer | None = None):
        self._node = node
        self._namer = namer
        self.dtypes = dtypes
        self.shapes = shapes
        self._values = None
        self._schema = _UNSET
        self._convert_graph = None  # set by the interpreter for a graph converter (expand)

    @property
    def dtype(self) -> int | None:
        return self.dtypes[0] if self.dtypes else None

    @property
    def shape(self) -> tuple | None:
        return self.shapes[0] if self.shapes else None

    # -- inputs ---------------------------------------------------------------------------

    @property
    def input_values(self) -> tuple:
        """torch's value of each positional argument: a FakeTensor, SymInt or a constant.

        For what ONNX types cannot say: ``torch.result_type`` between a tensor and a python
        scalar, a tensor's strides or storage offset.
        """
        if self._values is None:
            self._values = tuple(_meta_value(a) for a in self._node.args)
        return self._values

    @property
    def input_dtypes(self) -> tuple:
        """ONNX element type of each positional argument, None for a non-tensor one."""
        return tuple(
            onnx_type_from_torch(v.dtype) if hasattr(v, "dtype") else None
            for v in self.input_values
        )

    @property
    def input_shapes(self) -> tuple:
        """Shape of each positional tensor argument (ints and dimension names), else None."""
        namer = self._namer or ShapeNamer()
        return tuple(namer.shape(v.shape) if hasattr(v, "shape") else None for v in self.input_values)

    def input_read_elsewhere(self, i: int) -> bool:
        """True when positional argument ``i`` is a graph value also read by another node.

        An in-place op's update of an input matters only when something else reads it.
        """
        arg = self._node.args[i]
        users = getattr(arg, "users", None)
        return bool(users) and any(u is not self._node for u in users)

    # -- outputs --------------------------------------------------------------------------

    @property
    def outputs_used(self) -> tuple:
        """One bool per output: False when nothing in the graph reads it.

        torch.export leaves ``getitem`` nodes without users (the indices of a max pooling
        whose caller dropped them); the interpreter names such an output ``""`` too.
        """
        import operator

        n = max(len(self.dtypes), 1)
        used = [False] * n
        for user in self._node.users:
            if user.target is not operator.getitem:
                return (True,) * n  # the whole tuple is used
            if type(user.args[1]) is int and user.users and user.args[1] < n:
                used[user.args[1]] = True
        return tuple(used)

    # -- the op ---------------------------------------------------------------------------

    @property
    def schema(self):
        """The op's ``torch.FunctionSchema`` (None for a python function such as getitem)."""
        if self._schema is _UNSET:
            self._schema = getattr(self._node.target, "_schema", None)
        return self._schema

    @property
    def op_name(self) -> str:
        """``aten::max_pool2d``: the schema name, or the target's name without a schema."""
        schema = self.schema
        if schema is not None:
            return schema.name
        return getattr(self._node.target, "__name__", str(self._node.target))

    @property
    def inplace(self) -> bool:
        """True when the op writes into one of its inputs (``add_``, ``batch_norm`` stats)."""
        schema = self.schema
        return bool(schema is not None and schema.is_mutable)

    @property
    def module_path(self) -> str:
        """Path of the innermost ``nn.Module`` that made the call (``layers.0.mlp``), or ''."""
        stack = self._node.meta.get("nn_module_stack")
        if not stack:
            return ""
        path, _cls = next(reversed(stack.values()))
        return path

    def __repr__(self) -> str:
        return f"ResultInfo({getattr(self._node, 'name', None)!r}, {self.dtypes}, {self.shapes})"


# -- complex values ------------------------------------------------------------------------------

#: ONNX type of the real tensor [..., 2] (real, imaginary) standing for a complex value.
COMPLEX_PARTS = {TensorProto.COMPLEX64: TensorProto.FLOAT, TensorProto.COMPLEX128: TensorProto.DOUBLE}


def represented(elem: int | None, shape: tuple | None) -> tuple:
    """(ONNX type, shape) of a value in the graph: a complex one is a real pair tensor.

    ONNX kernels take no complex tensors; a complex64 value of shape ``s`` travels between
    converters as float32 of shape ``s + (2,)`` (complex128: float64), as in onnxscript's
    torchlib. ``sts`` keeps torch's complex dtypes and shapes.
    """
    part = COMPLEX_PARTS.get(elem)
    if part is None:
        return elem, shape
    return part, (None if shape is None else (*shape, 2))


def complex_values(node) -> list:
    """torch's complex values among ``node``'s result(s) and tensor arguments."""
    found = []
    for value in (node.meta.get("val"), *(a.meta.get("val") for a in node.all_input_nodes)):
        for v in value if isinstance(value, (tuple, list)) else (value,):
            dtype = getattr(v, "dtype", None)
            if dtype is not None and dtype.is_complex:
                found.append(v)
    return found


def _meta_value(arg):
    if isinstance(arg, (list, tuple)):
        return type(arg)(_meta_value(a) for a in arg)
    meta = getattr(arg, "meta", None)
    return arg if meta is None else meta.get("val")


class ShapeNamer:
    """Turns torch sizes into ONNX shapes; SymInts become strings such as ``batch``.

    ``dim_names`` maps torch's symbols (``s77``) to the names the user chose; each symbolic
    expression is converted once and cached, since the same few recur on every node.
    """

    def __init__(self, dim_names: dict[str, str] | None = None):
        self.dim_names = dict(dim_names or {})
        self._cache: dict[Any, str] = {}
        self._fresh = 0

    def dim(self, d) -> int | str:
        if type(d) is int:
            return d
        expr = d.node.expr
        found = self._cache.get(expr)
        if found is None:
            if expr.is_number:
                return int(expr)
            found = self._name(expr)
            self._cache[expr] = found
        return found

    def _name(self, expr) -> str:
        if expr.is_Symbol:
            return self.dim_names.get(expr.name, expr.name)
        if _divides_by_a_size(expr):
            # torch simplifies these inexactly: view(-1, 6) of (c, 4) gives c*(4//((2*c)//3)),
            # 0 at c = 9 where the size is 6. A fresh name claims nothing wrong.
            self._fresh += 1
            return f"unk__tonnx_{self._fresh}"
        import sympy

        renames = {
            s: sympy.Symbol(self.dim_names[s.name])
            for s in expr.free_symbols
            if s.name in self.dim_names
        }
        return str(expr.xreplace(renames) if renames else expr)

    def shape(self, size) -> tuple:
        return tuple(d if type(d) is int else self.dim(d) for d in size)

    def info(self, node) -> ResultInfo:
        val = node.meta.get("val")
        if val is None:
            return ResultInfo(node, (), (), self)
        if isinstance(val, (tuple, list)):
            pairs = [self._type_shape(v) for v in val]
            return ResultInfo(node, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), self)
        elem, shape = self._type_shape(val)
        return ResultInfo(node, (elem,), (shape,), self)

    def _type_shape(self, val) -> tuple:
        dtype = getattr(val, "dtype", None)
        if dtype is not None:
            return onnx_type_from_torch(dtype), self.shape(val.shape)
        return _scalar_type(val), (() if _scalar_type(val) is not None else None)


def _divides_by_a_size(expr) -> bool:
    """True when ``expr`` holds a floor division or modulo by a symbolic expression."""
    import sympy

    for sub in sympy.preorder_traversal(expr):
        if type(sub).__name__ in _DIVISIONS and len(sub.args) == 2 and sub.args[1].free_symbols:
            return True
    return False


#: torch's sympy functions for integer division and remainder (torch.utils._sympy.functions)
_DIVISIONS = frozenset({"FloorDiv", "CleanDiv", "Mod", "PythonMod", "IntTrueDiv", "CeilDiv"})


def _scalar_type(val) -> int | None:
    """SymInt/SymFloat/SymBool results are 0-d tensors in ONNX."""
    from onnx import TensorProto

    name = type(val).__name__
    if name in ("SymInt", "int"):
        return TensorProto.INT64
    if name in ("SymFloat", "float"):
        return TensorProto.DOUBLE
    if name in ("SymBool", "bool"):
        return TensorProto.BOOL
    return None
