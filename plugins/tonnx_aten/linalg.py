"""Matrix products (linear, mm, bmm, matmul, the add* family, dot, outer, einsum) and determinants."""

from __future__ import annotations

import math
import string

import numpy as np
from onnx import TensorProto

from tonnx import Converter, UnsupportedError
from tonnx.converters import cast, is_float, named, op_accepts, operand

#: Integer types ONNX MatMul accepts; smaller integers are multiplied in int64 and wrapped
#: back (modular arithmetic gives torch's wrapped result).
_MATMUL_INTS = (TensorProto.INT32, TensorProto.INT64, TensorProto.UINT32, TensorProto.UINT64)
_SMALL_INTS = (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16)


def _compute_type(g, elem: int, what: str) -> int:
    """The type a product runs in: ``elem``, float32 for a float type the op lacks
    (Einsum has no bfloat16), or int64 for the small integer types."""
    if is_float(elem) and not op_accepts(g, what, elem):
        return TensorProto.FLOAT
    if is_float(elem) or elem in _MATMUL_INTS:
        return elem
    if elem in _SMALL_INTS:
        return TensorProto.INT64
    raise UnsupportedError(f"{what} of {TensorProto.DataType.Name(elem)} tensors")


def _product(g, op_type: str, operands: list[str], elem: int, outputs=1, **attributes) -> str:
    """MatMul or Einsum in ``elem`` (torch's result type), through int64 for small ints."""
    compute = _compute_type(g, elem, op_type)
    operands = [cast(g, x, compute) for x in operands]
    if compute == elem:
        return g.make_node(op_type, operands, outputs, **attributes)
    wide = g.make_node(op_type, operands, **attributes)
    return g.op.Cast(wide, to=elem, outputs=outputs)


def _matmul(g, a: str, b: str, elem: int, outputs=1) -> str:
    return _product(g, "MatMul", [a, b], elem, outputs=outputs)


def _scaled(g, x: str, factor, elem: int) -> str:
    if factor == 1:
        return x
    return g.op.Mul(x, operand(g, factor, elem))


def _beta_self_plus(g, outputs, self, product: str, beta, alpha, elem: int) -> str:
    """``beta * self + alpha * product``; beta=0 ignores ``self`` (NaN included), as torch."""
    product = _scaled(g, product, alpha, elem)
    if beta == 0:
        return g.op.Identity(product, outputs=outputs)
    return g.op.Add(_scaled(g, cast(g, self, elem), beta, elem), product, outputs=outputs)


# aten::linear.default
def aten_linear(g, sts, outputs, input, weight, bias=None):
    "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"
    elem = sts.dtype
    if is_float(elem) and g.get_rank(input) == 2 and g.get_rank(weight) == 2:
        inputs = [input, weight] if bias is None else [input, weight, bias]
        return g.make_node("Gemm", inputs, outputs, transB=1)
    if g.get_rank(weight) == 2:
        weight = g.op.Transpose(weight, perm=[1, 0])
    if bias is None or g.is_zero_constant(bias):
        # a zero bias (freshly initialized layers) changes nothing but the sign of a zero
        return _matmul(g, input, weight, elem, outputs=outputs)
    return g.op.Add(_matmul(g, input, weight, elem), bias, outputs=outputs)


# aten::t.default
def aten_t(g, sts, outputs, self):
    "t(Tensor(a) self) -> Tensor(a)"
    if g.get_rank(self) < 2:
        return g.op.Identity(self, outputs=outputs)
    return g.op.Transpose(self, perm=[1, 0], outputs=outputs)


# aten::mm.default
def aten_mm(g, sts, outputs, self, mat2):
    "mm(Tensor self, Tensor mat2) -> Tensor"
    return _matmul(g, self, mat2, sts.dtype, outputs=outputs)


# aten::bmm.default
def aten_bmm(g, sts, outputs, self, mat2):
    "bmm(Tensor self, Tensor mat2) -> Tensor"
    return _matmul(g, self, mat2, sts.dtype, outputs=outputs)


# aten::matmul.default
def aten_matmul(g, sts, outputs, self, other):
    "matmul(Tensor self, Tensor other) -> Tensor"
    return _matmul(g, self, other, sts.dtype, outputs=outputs)


# aten::mv.default
def aten_mv(g, sts, outputs, self, vec):
    "mv(Tensor self, Tensor vec) -> Tensor"
    return _matmul(g, self, vec, sts.dtype, outputs=outputs)


# aten::dot.default
def aten_dot(g, sts, outputs, self, tensor):
    "dot(Tensor self, Tensor tensor) -> Tensor"
    return _matmul(g, self, tensor, sts.dtype, outputs=outputs)


# aten::vdot.default
def aten_vdot(g, sts, outputs, self, other):
    "vdot(Tensor self, Tensor other) -> Tensor"
    # conj(self) . other: real tensors only (ONNX has no complex MatMul)
    return _matmul(g, self, other, sts.dtype, outputs=outputs)


# aten::addmm.default
def aten_addmm(g, sts, outputs, self, mat1, mat2, beta=1, alpha=1):
    "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"
    elem = sts.dtype
    if not is_float(elem):
        return _beta_self_plus(g, outputs, self, _matmul(g, mat1, mat2, elem), beta, alpha, elem)
    inputs = [mat1, mat2] if beta == 0 else [mat1, mat2, self]
    return g.make_node("Gemm", inputs, outputs, alpha=float(alpha), beta=float(beta))


# aten::baddbmm.default
def aten_baddbmm(g, sts, outputs, self, batch1, batch2, beta=1, alpha=1):
    "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"
    elem = sts.dtype
    return _beta_self_plus(g, outputs, self, _matmul(g, batch1, batch2, elem), beta, alpha, elem)


# aten::addbmm.default
def aten_addbmm(g, sts, outputs, self, batch1, batch2, beta=1, alpha=1):
    "addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"
    elem = sts.dtype
    product = _product(g, "Einsum", [batch1, batch2], elem, equation="bmk,bkn->mn")
    return _beta_self_plus(g, outputs, self, product, beta, alpha, elem)


# aten::addmv.default
def aten_addmv(g, sts, outputs, self, mat, vec, beta=1, alpha=1):
    "addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor"
    elem = sts.dtype
    return _beta_self_plus(g, outputs, self, _matmul(g, mat, vec, elem), beta, alpha, elem)


def _outer(g, a: str, b: str, elem: int, outputs=1) -> str:
    column = g.op.Unsqueeze(operand(g, a, elem), [1])
    if elem == TensorProto.BOOL:
        return g.op.And(column, b, outputs=outputs)
    return g.op.Mul(column, operand(g, b, elem), outputs=outputs)


# aten::outer.default
def aten_outer(g, sts, outputs, self, vec2):
    "outer(Tensor self, Tensor vec2) -> Tensor"
    return _outer(g, self, vec2, sts.dtype, outputs=outputs)


# aten::ger.default
def aten_ger(g, sts, outputs, self, vec2):
    "ger(Tensor self, Tensor vec2) -> Tensor"
    return _outer(g, self, vec2, sts.dtype, outputs=outputs)


# aten::addr.default
def aten_addr(g, sts, outputs, self, vec1, vec2, beta=1, alpha=1):
    "addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"
    elem = sts.dtype
    if elem == TensorProto.BOOL:
        raise UnsupportedError("addr on bool tensors (torch uses logical and/or there)")
    return _beta_self_plus(g, outputs, self, _outer(g, vec1, vec2, elem), beta, alpha, elem)


def _explicit_equation(equation: str) -> str:
    """The equation with its output spelled out, as torch's implicit mode defines it.

    torch sorts the implicit output labels with upper case first (A..Z, a..z) and puts the
    ellipsis dimensions first; spelling them out leaves no room for a runtime to differ.
    """
    equation = equation.replace(" ", "")
    if "->" in equation:
        return equation
    letters = [c for c in equation if c.isalpha()]
    once = sorted((c for c in set(letters) if letters.count(c) == 1), key=lambda c: (c.islower(), c))
    ellipsis = "..." if "..." in equation else ""
    return f"{equation}->{ellipsis}{''.join(once)}"


# aten::einsum.default
def aten_einsum(g, sts, outputs, equation, tensors, path=None):
    "einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor"
    equation = _explicit_equation(equation)
    return _product(g, "Einsum", list(tensors), sts.dtype, outputs=outputs, equation=equation)


# aten::inner.default
def aten_inner(g, sts, outputs, self, other):
    "inner(Tensor self, Tensor other) -> Tensor"
    elem = sts.dtype
    ra, rb = g.get_rank(self), g.get_rank(other)
    if ra == 0 or rb == 0:
        return g.op.Mul(operand(g, self, elem), operand(g, other, elem), outputs=outputs)
    letters = string.ascii_letters
    if ra + rb - 1 > len(letters):
        raise UnsupportedError(f"inner of tensors of ranks {ra} and {rb}")
    a = letters[: ra - 1]
    b = letters[ra - 1 : ra + rb - 2]
    k = letters[ra + rb - 2]
    equation = f"{a}{k},{b}{k}->{a}{b}"
    return aten_einsum(g, sts, outputs, equation, [self, other])


def _trilinear_label(d: int) -> str:
    return string.ascii_letters[d]


# aten::_trilinear.default
def aten__trilinear(g, sts, outputs, i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    "_trilinear(Tensor i1, Tensor i2, Tensor i3, int[] expand1, int[] expand2, int[] expand3, int[] sumdim, int unroll_dim=1) -> Tensor"
    # torch: the three inputs unsqueezed at their expand dims, multiplied, summed over sumdim
    # (bilinear: x1 (B, i), W (o, i, j), x2 (B, j) -> "ac,bcd,ad->ab"); unroll_dim only
    # chooses torch's loop order
    total = g.get_rank(i1) + len(expand1)
    if total > len(string.ascii_letters):
        raise UnsupportedError(f"_trilinear on {total} dimensions")
    inputs = [(i1, set(expand1)), (i2, set(expand2)), (i3, set(expand3))]
    kept = [d for d in range(total) if d not in set(sumdim)]
    for d in range(total):
        sizes = {g.get_shape(x)[sum(1 for e in range(d) if e not in ex)] for x, ex in inputs if d not in ex}
        if len(sizes) > 1 or (not sizes and d in kept):
            raise UnsupportedError(
                f"_trilinear broadcasting dimension {d} (sizes {sorted(map(str, sizes))} in the inputs "
                f"that keep it): Einsum needs equal sizes; call torch.einsum or broadcast explicitly."
            )
    specs = ["".join(_trilinear_label(d) for d in range(total) if d not in ex) for _, ex in inputs]
    equation = ",".join(specs) + "->" + "".join(_trilinear_label(d) for d in kept)
    return _product(g, "Einsum", [i1, i2, i3], sts.dtype, outputs=outputs, equation=equation)


# -- distances ---------------------------------------------------------------------------------


def _axes(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _last_axes(rank: int, count: int = 1) -> np.ndarray:
    """The last ``count`` axes of a rank-``rank`` tensor, counted from the front: onnxruntime
    1.31.1's reductions of an empty tensor ignore negative axes (they return the input's
    shape: a 0 x 0 determinant came out 0 x 0); 1.32 and non-negative axes are right."""
    return np.arange(rank - count, rank, dtype=np.int64)


def _direct_dist(g, x1: str, x2: str, p: float, elem: int) -> str:
    """Pairwise ``p``-norm distances from the differences, as torch's direct kernel."""
    diff = g.op.Sub(g.op.Unsqueeze(x1, _axes(-2)), g.op.Unsqueeze(x2, _axes(-3)))
    last = _last_axes(max(g.get_rank(x1), g.get_rank(x2)) + 1)
    if p == 0:
        nonzero = cast(g, g.op.Not(g.op.Equal(diff, operand(g, 0, elem))), elem)
        return g.op.ReduceSum(nonzero, last, keepdims=0)
    if p == math.inf:
        return g.op.ReduceMax(g.op.Abs(diff), last, keepdims=0)
    if p == 1:
        return g.op.ReduceSum(g.op.Abs(diff), last, keepdims=0)
    if p == 2:
        return g.op.Sqrt(g.op.ReduceSum(g.op.Mul(diff, diff), last, keepdims=0))
    powered = g.op.Pow(g.op.Abs(diff), operand(g, p, elem))
    return g.op.Pow(g.op.ReduceSum(powered, last, keepdims=0), operand(g, 1.0 / p, elem))


def _mm_dist(g, x1: str, x2: str, elem: int) -> str:
    """Euclidean distances through a matrix product, as torch's ``_euclidean_dist``."""
    rank = g.get_rank(x2)
    n1 = g.op.ReduceSum(g.op.Mul(x1, x1), _last_axes(g.get_rank(x1)), keepdims=1)
    n2 = g.op.ReduceSum(g.op.Mul(x2, x2), _last_axes(rank), keepdims=1)
    swap = [*range(rank - 2), rank - 1, rank - 2]
    x2t, n2t = g.op.Transpose(x2, perm=swap), g.op.Transpose(n2, perm=swap)
    product = g.op.MatMul(g.op.Mul(x1, operand(g, -2, elem)), x2t)
    squared = g.op.Add(g.op.Add(product, n1), n2t)
    return g.op.Sqrt(g.op.Max(squared, operand(g, 0, elem)))


def _uses_mm(g, x1: str, x2: str, mode: int):
    """torch's choice of the matrix-product kernel: a bool, or a 0-d bool name if dynamic.

    An empty input takes the direct kernel, which gives the same (empty, or 0 distances
    over no features): onnxruntime 1.31.1's fused MatMul fails on an empty batch."""
    if any(d == 0 for x in (x1, x2) for d in g.get_shape(x)):
        return False
    if mode == 1:
        return True
    if mode != 0:
        return False
    rows = [g.get_shape(x1)[-2], g.get_shape(x2)[-2]]
    if all(type(r) is int for r in rows):
        return any(r > 25 for r in rows)
    sizes = [g.op.Shape(x, start=-2, end=-1) for x in (x1, x2)]
    large = [g.op.Greater(s, np.array([25], dtype=np.int64)) for s in sizes]
    return g.op.Squeeze(g.op.Or(*large), _axes(0))


# aten::_cdist_forward.default
def aten__cdist_forward(g, sts, outputs, x1, x2, p=2.0, compute_mode=None):
    "_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor"
    elem = sts.dtype
    if not is_float(elem):
        raise UnsupportedError(f"cdist of {TensorProto.DataType.Name(elem)} tensors")
    if p < 0:
        raise UnsupportedError(f"cdist with p={p} < 0")
    x1, x2 = cast(g, x1, elem), cast(g, x2, elem)
    mode = 0 if compute_mode is None else compute_mode
    use_mm = _uses_mm(g, x1, x2, mode) if p == 2 else False
    if use_mm is False:
        return g.op.Identity(_direct_dist(g, x1, x2, p, elem), outputs=outputs)
    if use_mm is True:
        return g.op.Identity(_mm_dist(g, x1, x2, elem), outputs=outputs)
    direct, mm = _direct_dist(g, x1, x2, p, elem), _mm_dist(g, x1, x2, elem)
    return g.op.Where(use_mm, mm, direct, outputs=outputs)


# aten::_pdist_forward.default
def aten__pdist_forward(g, sts, outputs, self, p=2.0):
    "_pdist_forward(Tensor self, float p=2.) -> Tensor"
    elem = sts.dtype
    if not is_float(elem):
        raise UnsupportedError(f"pdist of {TensorProto.DataType.Name(elem)} tensors")
    if p < 0:
        raise UnsupportedError(f"pdist with p={p} < 0")
    self = cast(g, self, elem)
    full = g.op.Reshape(_direct_dist(g, self, self, p, elem), _axes(-1))
    rows = g.op.Shape(self, start=0, end=1)
    square = g.op.Expand(np.array(True), g.op.Concat(rows, rows, axis=0))
    upper = g.op.Reshape(g.op.Trilu(square, np.array(1, dtype=np.int64), upper=1), _axes(-1))
    return g.op.Compress(full, upper, axis=0, outputs=outputs)


# aten::det.default
def aten_det(g, sts, outputs, self):
    "det(Tensor self) -> Tensor"
    return aten_linalg_det(g, sts, outputs, self)


# aten::linalg_det.default
def aten_linalg_det(g, sts, outputs, A):
    "linalg_det(Tensor A) -> Tensor"
    if sts.dtype != TensorProto.FLOAT:
        raise UnsupportedError(f"det of element type {sts.dtype}: onnxruntime's Det computes float32 only")
    return g.op.Det(A, outputs=outputs)


# aten::_linalg_det.default
def aten__linalg_det(g, sts, outputs, A):
    "_linalg_det(Tensor A) -> (Tensor result, Tensor LU, Tensor pivots)"
    if outputs[1] or outputs[2]:
        raise UnsupportedError("_linalg_det's LU factors and pivots (ONNX's Det gives the determinant only)")
    return aten_linalg_det(g, sts, outputs[:1], A), "", ""


#: the largest matrix whose determinant cannot overflow float32 once each row's largest
#: magnitude is scaled into (0.5, 1]: Hadamard's bound n ** (n / 2) < 3.4e38 up to n = 46
_SLOGDET_MAX_N = 46


def _slogdet(g, sts, A: str) -> tuple[str, str]:
    """(sign, log|det|) of float32 matrices through Det, rows scaled by powers of two.

    det(A) = det(A') * prod(2 ** e_i) with A' = A's rows divided by 2 ** e_i (exact):
    Det(A') can neither overflow nor lose the scale to underflow, which Det(A) would.
    """
    if sts.input_dtypes[0] != TensorProto.FLOAT:
        raise UnsupportedError(
            f"{sts.op_name} of element type {TensorProto.DataType.Name(sts.input_dtypes[0])}: "
            f"onnxruntime's Det computes float32 only; cast the matrix to float32."
        )
    n = sts.input_shapes[0][-1]
    if type(n) is not int or n > _SLOGDET_MAX_N:
        raise UnsupportedError(
            f"{sts.op_name} of {n} x {n} matrices: computed through ONNX's Det, exact from "
            f"overflow up to {_SLOGDET_MAX_N} x {_SLOGDET_MAX_N} static sizes only."
        )
    rank = len(sts.input_shapes[0])
    largest = g.op.ReduceMax(g.op.Abs(A), _last_axes(rank), keepdims=1)
    # e = floor(log2(largest)) + 1, clipped to float32's normal exponents (a zero row: -126)
    exponent = g.op.Floor(g.op.Div(g.op.Log(largest), np.array(math.log(2), dtype=np.float32)))
    exponent = g.op.Clip(exponent, np.array(-126, dtype=np.float32), np.array(127, dtype=np.float32))
    scaled = g.op.Mul(g.op.Div(A, g.op.Pow(np.array(2, dtype=np.float32), exponent)), np.array(0.5, dtype=np.float32))
    det = g.op.Det(scaled)
    shift = g.op.ReduceSum(g.op.Add(exponent, np.array(1, dtype=np.float32)), _last_axes(rank, 2), keepdims=0)
    logabsdet = g.op.Add(g.op.Log(g.op.Abs(det)), g.op.Mul(shift, np.array(math.log(2), dtype=np.float32)))
    return g.op.Sign(det), logabsdet


# aten::_linalg_slogdet.default
def aten__linalg_slogdet(g, sts, outputs, A):
    "_linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet, Tensor LU, Tensor pivots)"
    if outputs[2] or outputs[3]:
        raise UnsupportedError("_linalg_slogdet's LU factors and pivots (ONNX's Det gives the determinant only)")
    results = _slogdet(g, sts, A)
    return tuple(named(g, r, name) if name else "" for r, name in zip(results, outputs[:2])) + ("", "")


# aten::linalg_slogdet.default
def aten_linalg_slogdet(g, sts, outputs, A):
    "linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)"
    return aten__linalg_slogdet(g, sts, [*outputs, "", ""], A)[:2]


# aten::logdet.default
def aten_logdet(g, sts, outputs, self):
    "logdet(Tensor self) -> Tensor"
    sign, logabsdet = _slogdet(g, sts, self)
    # torch: nan for a negative determinant, -inf (log of 0) for a zero one
    negative = g.op.Less(sign, np.array(0, dtype=np.float32))
    return g.op.Where(negative, np.array(np.nan, dtype=np.float32), logabsdet, outputs=outputs)


CONVERTERS = (
    Converter("aten::_trilinear.default", aten__trilinear),
    Converter("aten::_linalg_slogdet.default", aten__linalg_slogdet),
    Converter("aten::linalg_slogdet.default", aten_linalg_slogdet),
    Converter("aten::logdet.default", aten_logdet),
    Converter("aten::linalg_det.default", aten_linalg_det),
    Converter("aten::det.default", aten_det),
    Converter("aten::_linalg_det.default", aten__linalg_det),
    Converter("aten::linear.default", aten_linear),
    Converter("aten::t.default", aten_t),
    Converter("aten::mm.default", aten_mm),
    Converter("aten::bmm.default", aten_bmm),
    Converter("aten::matmul.default", aten_matmul),
    Converter("aten::mv.default", aten_mv),
    Converter("aten::dot.default", aten_dot),
    Converter("aten::vdot.default", aten_vdot),
    Converter("aten::addmm.default", aten_addmm),
    Converter("aten::addmm_.default", aten_addmm),
    Converter("aten::baddbmm.default", aten_baddbmm),
    Converter("aten::baddbmm_.default", aten_baddbmm),
    Converter("aten::addbmm.default", aten_addbmm),
    Converter("aten::addbmm_.default", aten_addbmm),
    Converter("aten::addmv.default", aten_addmv),
    Converter("aten::addmv_.default", aten_addmv),
    Converter("aten::outer.default", aten_outer),
    Converter("aten::ger.default", aten_ger),
    Converter("aten::addr.default", aten_addr),
    Converter("aten::addr_.default", aten_addr),
    Converter("aten::einsum.default", aten_einsum),
    Converter("aten::inner.default", aten_inner),
    Converter("aten::_cdist_forward.default", aten__cdist_forward),
    Converter("aten::_pdist_forward.default", aten__pdist_forward),
    Converter("aten::cdist.default", aten__cdist_forward),
    Converter("aten::pdist.default", aten__pdist_forward),
)
