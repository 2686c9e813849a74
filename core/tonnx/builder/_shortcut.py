"""``g.op.MatMul(x, w)``: the short form of ``g.make_node`` that accepts constants."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx.defs

from tonnx._errors import TonnxError


class OpShortcut:
    """Attribute access names an ONNX operator of the main domain.

    The name is checked against ONNX's operator schemas the first time it is used, so a
    typo fails at once instead of producing an unknown op. Positional arguments are result
    names, numpy arrays, python scalars or lists; ``None`` is an omitted optional input.
    Python scalars take the element type of the first tensor input whose type is known.
    """

    __slots__ = ("_g", "_makers")

    def __init__(self, g):
        self._g = g
        self._makers: dict[str, Any] = {}

    def __getattr__(self, op_type: str):
        maker = self._makers.get(op_type)
        if maker is None:
            if op_type.startswith("_") or not onnx.defs.has(op_type):
                raise AttributeError(f"{op_type!r} is not an operator of the ONNX main domain.")
            maker = _OpMaker(self._g, op_type)
            self._makers[op_type] = maker
        return maker


class _OpMaker:
    __slots__ = ("_g", "_op_type")

    def __init__(self, g, op_type: str):
        self._g = g
        self._op_type = op_type

    def __call__(self, *args: Any, outputs: Any = 1, name: str | None = None, **attributes):
        g = self._g
        like = None
        for a in args:
            if type(a) is str and a:
                like = a
                break
        inputs = [_as_input(g, a, like) for a in args]
        return g.make_node(self._op_type, inputs, outputs, name=name, **attributes)


def _as_input(g, value: Any, like: str | None) -> str:
    if type(value) is str:
        return value
    if value is None:
        return ""
    if isinstance(value, (bool, int, float)) and like is not None:
        from tonnx.builder._dtypes import numpy_dtype

        value = np.array(value, dtype=numpy_dtype(g.get_type(like)))
    try:
        return g.make_initializer("", value)
    except TypeError as e:
        raise TonnxError(f"Cannot use {value!r} as an input: {e}") from e
