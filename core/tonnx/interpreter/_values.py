"""FX meta values -> ONNX types and shapes, with symbolic dimensions named once."""

from __future__ import annotations

from typing import Any

from ..builder._dtypes import onnx_type_from_torch


class ResultInfo:
    """What torch.export knows of a node's results, passed to converters as ``sts``.

    ``dtypes``/``shapes`` hold one entry per output (None for a non-tensor output);
    ``node`` is the FX node, for converters that need their inputs' meta values.
    """

    __slots__ = ("node", "dtypes", "shapes", "_convert_graph")

    def __init__(self, node, dtypes: tuple, shapes: tuple):
        self.node = node
        self.dtypes = dtypes
        self.shapes = shapes
        self._convert_graph = None  # set by the interpreter for a graph converter (expand)

    @property
    def dtype(self) -> int | None:
        return self.dtypes[0] if self.dtypes else None

    @property
    def shape(self) -> tuple | None:
        return self.shapes[0] if self.shapes else None

    def __repr__(self) -> str:
        return f"ResultInfo({getattr(self.node, 'name', None)!r}, {self.dtypes}, {self.shapes})"


class ShapeNamer:
    """Turns torch sizes into ONNX shapes; SymInts become strings such as ``batch``.

    ``dim_names`` maps torch's symbols (``s77``) to the names the user chose; each symbolic
    expression is converted once and cached, since the same few recur on every node.
    """

    def __init__(self, dim_names: dict[str, str] | None = None):
        self.dim_names = dict(dim_names or {})
        self._cache: dict[Any, str] = {}

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
            return ResultInfo(node, (), ())
        if isinstance(val, (tuple, list)):
            pairs = [self._type_shape(v) for v in val]
            return ResultInfo(node, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))
        elem, shape = self._type_shape(val)
        return ResultInfo(node, (elem,), (shape,))

    def _type_shape(self, val) -> tuple:
        dtype = getattr(val, "dtype", None)
        if dtype is not None:
            return onnx_type_from_torch(dtype), self.shape(val.shape)
        return _scalar_type(val), (() if _scalar_type(val) is not None else None)


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
