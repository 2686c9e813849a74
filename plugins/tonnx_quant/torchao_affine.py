"""torchao's affine quantization ops (``torchao::quantize_affine``, ``dequantize_affine``,
``choose_qparams_affine``); the int8 matmul its dynamic schemes call (``aten::_int_mm``) is
in ``int8_weight`` (an aten op, converted with or without torchao).

Loaded only when torchao is installed (the ops exist once torchao is imported). ``block_size``
generalizes per-tensor, per-channel, per-token and per-group: the input is viewed as
``(..., size // block, block, ...)`` and each block shares one parameter, as torchao's
``_get_reduction_params`` does. torch's arithmetic op for op in float32 (other dtypes are
refused); a constant weight dequantized per row or per group of its last dimension becomes
one ``DequantizeLinear`` (``axis``, ``block_size`` from opset 21) reading the int8 tensor.
"""

from __future__ import annotations

import numpy as np

from tonnx import UnsupportedError
from tonnx.converters import Converter, cast, shape_of, shape_tensor, torch_dtype

from ._four_bit import as_four_bit, four_bit_type, per_row_transposed_blocks, transposed_blocks
from ._qparams import FLOAT, constant, dtype_range, qdq_accepts, quant_type, reciprocal
from .int8_weight import BLOCK


def _blocks(g, input, block_size) -> tuple[list, list[int], list]:
    """(shape_for_reduction, reduction_dims, shape of the parameters) as torchao computes
    them; a dimension split into blocks must be static."""
    sizes = g.get_shape(input)
    view, reduce, params = [], [], []
    for i, (size, block) in enumerate(zip(sizes, block_size)):
        dim = size if type(size) is int else shape_of(g, input, i, i + 1)
        if block != size and block > 1:
            if type(size) is not int:
                raise UnsupportedError(f"torchao block_size {list(block_size)} splits dimension {i}, which is dynamic; export it static.")
            view += [size // block, block]
            params += [size // block, 1]
            reduce.append(len(view) - 1)
        else:
            view.append(dim)
            params.append(dim if block == 1 else 1)
            if block != 1:
                reduce.append(len(view) - 1)
    return view, reduce, params


def _float32(g, name: str, what: str) -> None:
    if g.get_type(name) != FLOAT:
        raise UnsupportedError(f"torchao {what} in {torch_dtype(g.get_type(name))}: tonnx converts float32 (torch's half-precision arithmetic is not reproduced); quantize the float32 model.")


def _range(dtype, quant_min, quant_max) -> tuple[int, int]:
    quant_type(dtype)
    low, high = dtype_range(dtype)
    return (low if quant_min is None else int(quant_min)), (high if quant_max is None else int(quant_max))


# torchao::quantize_affine.default
def torchao_quantize_affine(g, sts, outputs, input, block_size, scale, zero_point, output_dtype, quant_min=None, quant_max=None):
    "quantize_affine(Tensor input, SymInt[] block_size, Tensor scale, Tensor? zero_point, ScalarType output_dtype, Scalar? quant_min=None, Scalar? quant_max=None) -> Tensor"  # noqa: E501
    elem = quant_type(output_dtype)
    low, high = _range(output_dtype, quant_min, quant_max)
    _float32(g, input, "quantize_affine")
    _float32(g, scale, "quantize_affine's scale")
    view, _, params = _blocks(g, input, block_size)
    x = g.op.Reshape(input, shape_tensor(g, view))
    # torch: clamp(round(x * (1.0 / scale)) + zero_point, quant_min, quant_max).to(dtype)
    y = g.op.Round(g.op.Mul(x, reciprocal(g, g.op.Reshape(scale, shape_tensor(g, params)))))
    if zero_point is not None and g.get_shape(zero_point) != (0,):
        y = g.op.Add(y, cast(g, g.op.Reshape(zero_point, shape_tensor(g, params)), FLOAT))
    y = g.op.Cast(g.op.Clip(y, np.float32(low), np.float32(high)), to=elem)
    return g.op.Reshape(y, g.op.Shape(input), outputs=outputs)


def _blocked_dequantize(g, outputs, input, scale, zero_point, elem, block_size, quant_range, *, linear=False):
    """One DequantizeLinear for a constant 2-D weight quantized per row or per group of its
    rows (the QDQ form: the weight stays int8, or int4 when its range fits in four bits from
    opset 21); None when the case is another. ``linear``: the weight of linears only, an
    8-bit one stored ``(K, N)`` in blocks (per row: the row's scale over blocks of
    :data:`BLOCK`) as the 4-bit ones, the layout onnxruntime fuses into MatMulNBits."""
    shape = g.get_shape(input)
    w, s = constant(g, input), constant(g, scale)
    z = constant(g, zero_point) if zero_point is not None else np.zeros((), np.int8)
    if (len(shape) != 2 or w is None or s is None or z is None or block_size[0] != 1
            or s.dtype != np.float32 or not qdq_accepts(g, "DequantizeLinear", elem)):
        return None
    rows, columns = shape
    block = block_size[1]
    groups = columns // block
    info = np.iinfo(w.dtype)
    if np.any(z < info.min) or np.any(z > info.max):
        return None
    if groups > 1 and g.main_opset < 21:
        return None
    shape = (rows, groups) if groups > 1 else (rows,)
    s = s.reshape(shape)
    z = np.broadcast_to(z, (rows, groups)).reshape(shape).astype(w.dtype)
    four_bit = four_bit_type(g, w, z, *quant_range)
    if four_bit is not None and groups > 1:
        return transposed_blocks(g, outputs, input, w, s, z, block, four_bit)
    if linear and four_bit is None and g.main_opset >= 21:
        if groups == 1:  # per row: the same scale over every block of the row
            return per_row_transposed_blocks(g, outputs, input, w, s, z, BLOCK, g.get_type(input))
        return transposed_blocks(g, outputs, input, w, s, z, block, g.get_type(input))
    if four_bit is not None:
        input, z = as_four_bit(g, input, w, four_bit), as_four_bit(g, f"{input}_zero_point", z, four_bit)
    if groups == 1:
        return g.op.DequantizeLinear(input, s, z, axis=0, outputs=outputs)
    return g.op.DequantizeLinear(input, s, z, axis=1, block_size=block, outputs=outputs)


def _weight_of_linears(node) -> bool:
    """The dequantized 2-D tensor is the weight of linears only (their input not a static
    dequantize)."""
    from .dequantized_linear import reads_weight_of_linear

    val = getattr(node.args[0], "meta", {}).get("val")
    return (val is not None and val.dim() == 2 and bool(node.users)
            and all(reads_weight_of_linear(user, node) for user in node.users))


# torchao::dequantize_affine.default
def torchao_dequantize_affine_weight(g, sts, outputs, input, block_size, scale, zero_point, input_dtype, quant_min=None, quant_max=None, output_dtype=6):  # noqa: E501
    "dequantize_affine(Tensor input, SymInt[] block_size, Tensor scale, Tensor? zero_point, ScalarType input_dtype, Scalar? quant_min=None, Scalar? quant_max=None, ScalarType output_dtype=6) -> Tensor"  # noqa: E501
    return _dequantize_affine(g, sts, outputs, input, block_size, scale, zero_point, input_dtype, quant_min, quant_max,
                              True)


# torchao::dequantize_affine.default
def torchao_dequantize_affine(g, sts, outputs, input, block_size, scale, zero_point, input_dtype, quant_min=None, quant_max=None, output_dtype=6):  # noqa: E501
    "dequantize_affine(Tensor input, SymInt[] block_size, Tensor scale, Tensor? zero_point, ScalarType input_dtype, Scalar? quant_min=None, Scalar? quant_max=None, ScalarType output_dtype=6) -> Tensor"  # noqa: E501
    return _dequantize_affine(g, sts, outputs, input, block_size, scale, zero_point, input_dtype, quant_min, quant_max,
                              False)


def _dequantize_affine(g, sts, outputs, input, block_size, scale, zero_point, input_dtype, quant_min, quant_max,
                       linear: bool):
    elem = quant_type(input_dtype)
    if sts.dtype != FLOAT:
        raise UnsupportedError("torchao dequantize_affine to a type other than float32: tonnx converts float32 outputs; quantize the float32 model.")
    _float32(g, scale, "dequantize_affine's scale")
    if zero_point is not None and g.get_shape(zero_point) == (0,):
        zero_point = None
    found = _blocked_dequantize(g, outputs, input, scale, zero_point, elem, list(block_size), (quant_min, quant_max),
                                linear=linear)
    if found is not None:
        return found
    view, _, params = _blocks(g, input, block_size)
    # torch: (x.to(out) - zero_point.to(out)) * scale
    y = g.op.Cast(g.op.Reshape(input, shape_tensor(g, view)), to=FLOAT)
    if zero_point is not None:
        y = g.op.Sub(y, g.op.Cast(g.op.Reshape(zero_point, shape_tensor(g, params)), to=FLOAT))
    y = g.op.Mul(y, g.op.Reshape(scale, shape_tensor(g, params)))
    return g.op.Reshape(y, g.op.Shape(input), outputs=outputs)


# torchao::choose_qparams_affine.default
def torchao_choose_qparams_affine(g, sts, outputs, input, mapping_type, block_size, target_dtype, quant_min=None, quant_max=None, eps=None, scale_dtype=None, zero_point_dtype=None, keepdim=False):  # noqa: E501
    "choose_qparams_affine(Tensor? input, str mapping_type, SymInt[] block_size, ScalarType target_dtype, Scalar? quant_min=None, Scalar? quant_max=None, float? eps=None, ScalarType? scale_dtype=None, ScalarType? zero_point_dtype=None, bool keepdim=False) -> (Tensor, Tensor)"  # noqa: E501
    low, high = _range(target_dtype, quant_min, quant_max)
    _float32(g, input, "choose_qparams_affine")
    if mapping_type not in ("SYMMETRIC", "ASYMMETRIC"):
        raise UnsupportedError(f"torchao choose_qparams_affine with mapping_type={mapping_type!r}: tonnx converts SYMMETRIC and ASYMMETRIC.")
    eps = float(np.finfo(np.float32).smallest_normal) if eps is None else eps
    view, reduce, params = _blocks(g, input, block_size)
    x = g.op.Reshape(input, shape_tensor(g, view))
    axes = np.array(reduce, dtype=np.int64)
    f32 = np.float32
    low_v = g.op.Min(g.op.ReduceMin(x, axes, keepdims=1), f32(0.0))
    high_v = g.op.Max(g.op.ReduceMax(x, axes, keepdims=1), f32(0.0))
    if mapping_type == "SYMMETRIC":
        high_v = g.op.Max(g.op.Neg(low_v), high_v)
        scale = g.op.Div(high_v, f32(float(high - low) / 2))
        zero_point = g.op.Mul(scale, f32(0.0))
        zero_point = g.op.Add(g.op.Mul(scale, f32(0.0)), f32(int((high + low + 1) / 2)))
        scale = g.op.Max(scale, f32(eps))
    else:
        scale = g.op.Max(g.op.Div(g.op.Sub(high_v, low_v), f32(float(high - low))), f32(eps))
        zero_point = g.op.Sub(f32(low), g.op.Round(g.op.Div(low_v, scale)))
        zero_point = g.op.Clip(zero_point, f32(low), f32(high))
    if keepdim:
        dims = params
    elif reduce:
        dims = [d for i, d in enumerate(params) if i not in reduce]
    else:  # torch's amin(dim=[]) reduces every dimension: a 0-d result
        dims = []
    shape = shape_tensor(g, dims)
    scale_out = g.op.Cast(g.op.Reshape(scale, shape), to=sts.dtypes[0], outputs=[outputs[0]]) if outputs[0] else ""
    zero_out = g.op.Cast(g.op.Reshape(zero_point, shape), to=sts.dtypes[1], outputs=[outputs[1]]) if outputs[1] else ""
    return scale_out, zero_out


CONVERTERS = (
    Converter("torchao::quantize_affine.default", torchao_quantize_affine),
    Converter("torchao::dequantize_affine.default", torchao_dequantize_affine),
    Converter("torchao::dequantize_affine.default", torchao_dequantize_affine_weight, applies=_weight_of_linears,
              priority=110),
    Converter("torchao::choose_qparams_affine.default", torchao_choose_qparams_affine),
)
