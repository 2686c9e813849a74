"""Element types of intermediate results, by a table lookup per node (no shape inference).

The interpreter sets the exact type and shape of every result an FX node produces;
converters only need the type of the intermediates they create to pick constants' types.
"""

from __future__ import annotations

from onnx import TensorProto

_BOOL_OPS = frozenset(
    {
        "Equal",
        "Less",
        "LessOrEqual",
        "Greater",
        "GreaterOrEqual",
        "Not",
        "And",
        "Or",
        "Xor",
        "IsNaN",
        "IsInf",
    }
)
_INT64_OPS = frozenset({"Shape", "Size", "ArgMax", "ArgMin", "NonZero"})
# Ops whose output type is the type of input 1 (Where(cond, x, y), CastLike(x, like)).
_SECOND_INPUT_OPS = frozenset({"Where", "CastLike"})
# QuantizeLinear: the zero point's type (uint8 without one); DequantizeLinear: the scale's.
_QUANTIZATION_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})
# Ops whose output type is their ``dtype`` attribute (random draws), when it is given.
_DTYPE_ATTRIBUTE_OPS = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "EyeLike"})
# Multi-output ops whose later outputs are int64 indices.
_INDICES_OPS = frozenset({"TopK", "MaxPool"})
# Ops whose mean/inverse-std outputs are in the stash type (float32 by default).
_STASHED_STATISTICS_OPS = frozenset({"LayerNormalization"})


def infer_types(g, node) -> None:
    """Sets the element type of each output of ``node`` when it follows from the op."""
    if node.domain:
        return
    op_type = node.op_type
    if op_type in _BOOL_OPS:
        elem = TensorProto.BOOL
    elif op_type in _INT64_OPS:
        elem = TensorProto.INT64
    elif op_type == "Cast":
        elem = node.attributes["to"]
    elif op_type in _DTYPE_ATTRIBUTE_OPS and "dtype" in node.attributes:
        elem = node.attributes["dtype"]
    elif op_type in _SECOND_INPUT_OPS:
        elem = g.get_type(node.inputs[1])
    elif op_type in _QUANTIZATION_OPS:
        elem = _quantization_type(g, node)
    elif op_type in ("MatMulInteger", "ConvInteger"):
        elem = TensorProto.INT32
    elif op_type == "Constant":  # from an inlined function body (onnxscript converters)
        elem = _constant_type(node.attributes)
        if elem is None:
            return
    elif op_type == "ConstantOfShape":
        value = node.attributes.get("value")
        elem = value.data_type if value is not None else TensorProto.FLOAT
    elif node.inputs and node.inputs[0] and g.has_type(node.inputs[0]):
        elem = g.get_type(node.inputs[0])
    else:
        return
    types = g.types
    outputs = node.outputs
    types[outputs[0]] = elem
    if len(outputs) > 1:
        if op_type in _INDICES_OPS:
            rest = TensorProto.INT64
        elif op_type in _STASHED_STATISTICS_OPS:
            rest = node.attributes.get("stash_type", TensorProto.FLOAT)
        else:
            rest = elem
        for out in outputs[1:]:
            if out:
                types[out] = rest


def _quantization_type(g, node) -> int:
    if node.attributes.get("output_dtype"):
        return node.attributes["output_dtype"]
    if node.op_type == "DequantizeLinear":
        return g.get_type(node.inputs[1])
    if len(node.inputs) > 2 and node.inputs[2]:
        return g.get_type(node.inputs[2])
    return TensorProto.UINT8


_CONSTANT_TYPES = {
    "value_float": TensorProto.FLOAT,
    "value_floats": TensorProto.FLOAT,
    "value_int": TensorProto.INT64,
    "value_ints": TensorProto.INT64,
    "value_string": TensorProto.STRING,
    "value_strings": TensorProto.STRING,
}


def _constant_type(attributes: dict) -> int | None:
    value = attributes.get("value")
    if value is not None:
        return getattr(value, "data_type", None)
    for key, elem in _CONSTANT_TYPES.items():
        if key in attributes:
            return elem
    return None
