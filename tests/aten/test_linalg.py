"""Hypothesis tests of the matrix-product converters: torch eager against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, check_op, op_module

COVERS = {
    "aten::_trilinear.default",
    "aten::_linalg_slogdet.default",
    "aten::linalg_slogdet.default",
    "aten::logdet.default",
    "aten::linalg_det.default",
    "aten::det.default",
    "aten::_linalg_det.default",
    "aten::linear.default",
    "aten::t.default",
    "aten::mm.default",
    "aten::bmm.default",
    "aten::matmul.default",
    "aten::mv.default",
    "aten::dot.default",
    "aten::vdot.default",
    "aten::addmm.default",
    "aten::addmm_.default",
    "aten::baddbmm.default",
    "aten::baddbmm_.default",
    "aten::addbmm.default",
    "aten::addbmm_.default",
    "aten::addmv.default",
    "aten::addmv_.default",
    "aten::outer.default",
    "aten::ger.default",
    "aten::addr.default",
    "aten::addr_.default",
    "aten::einsum.default",
    "aten::inner.default",
}

FLOATS = [torch.float32, torch.float64, torch.float16]
NUMBERS = [*FLOATS, torch.int64, torch.int32, torch.int8]
dims = st.integers(1, 5)
seeds = st.integers(0, 2**16)


def make(seed: int, shape, dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=gen) * 2 - 1).to(dtype)
    return torch.randint(-4, 5, shape, generator=gen).to(dtype)


def at_least_1d(fn):
    """``fn`` with a 0-d result made 1-d (by a broadcast add, exact).

    Works around tonnx.testing turning 0-d results into shape (1,) (np.ascontiguousarray).
    """

    def wrapped(*args):
        result = fn(*args)
        if result.dim() or result.dtype == torch.bool:
            return result
        return result + torch.zeros(1, dtype=result.dtype)

    return wrapped


def tol(dtype: torch.dtype) -> dict:
    if dtype == torch.float16:
        return {"atol": 1e-2, "rtol": 1e-2}
    return {"atol": 1e-5, "rtol": 1e-5}


@given(
    batch=st.lists(dims, max_size=2),
    k=dims,
    n=dims,
    bias=st.booleans(),
    vector_weight=st.booleans(),
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_linear(batch, k, n, bias, vector_weight, dtype, seed):
    x = make(seed, (*batch, k), dtype)
    w = make(seed + 1, (k,) if vector_weight else (n, k), dtype)
    tensors = [x, w]
    if bias and not vector_weight:  # torch.export cannot trace a 1-D weight with a bias
        tensors.append(make(seed + 2, (n,), dtype))
    check_op(at_least_1d(torch.nn.functional.linear), tensors, expect_op="aten::linear.default", **tol(dtype))


@given(batch=st.lists(dims, min_size=1, max_size=2), seed=seeds)
def test_linear_zero_bias_is_left_out(batch, seed):
    """A freshly initialized layer's zero bias adds nothing: no Add (or Gemm C) is emitted."""
    layer = torch.nn.Linear(4, 3)
    torch.nn.init.zeros_(layer.bias)
    onx = check_model(layer, (make(seed, (*batch, 4), torch.float32),), expect_ops=["aten::linear.default"])
    assert [n.op_type for n in onx.graph.node] in (["MatMul"], ["Gemm"])
    assert all(len(n.input) == 2 for n in onx.graph.node)


@given(shape=st.lists(dims, max_size=2), dtype=st.sampled_from(NUMBERS), seed=seeds)
def test_t(shape, dtype, seed):
    check_op(torch.t, [make(seed, shape, dtype)], expect_op="aten::t.default")


def _product_shapes(op: str, b: int, m: int, k: int, n: int, lead: list[int]):
    if op == "mm":
        return [(m, k), (k, n)]
    if op == "bmm":
        return [(b, m, k), (b, k, n)]
    if op == "mv":
        return [(m, k), (k,)]
    if op in ("dot", "vdot"):
        return [(k,), (k,)]
    # matmul: numpy broadcasting, 1-D operands included
    left = (k,) if m == 1 else (*lead, m, k)
    right = (k,) if n == 1 else (*lead[-1:], k, n)
    return [left, right]


@pytest.mark.parametrize("op", ["mm", "bmm", "matmul", "mv", "dot", "vdot"])
@given(
    b=dims,
    m=dims,
    k=dims,
    n=dims,
    lead=st.lists(dims, max_size=2),
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_products(op, b, m, k, n, lead, dtype, seed):
    a, c = _product_shapes(op, b, m, k, n, lead)
    tensors = [make(seed, a, dtype), make(seed + 1, c, dtype)]
    fn = at_least_1d(getattr(torch, op))
    check_op(fn, tensors, expect_op=f"aten::{op}.default", **tol(dtype))


def _coefficients(dtype, draw):
    if dtype.is_floating_point:
        values = st.sampled_from([0, 1, 0.5, -2.0])
    else:
        values = st.sampled_from([0, 1, 2, -3])
    return draw(values), draw(values)


def _add_product_shapes(op: str, b: int, m: int, k: int, n: int):
    """(self's full shape, operand shapes) for the add* ops."""
    if op == "addmm":
        return (m, n), [(m, k), (k, n)]
    if op == "baddbmm":
        return (b, m, n), [(b, m, k), (b, k, n)]
    if op == "addbmm":
        return (m, n), [(b, m, k), (b, k, n)]
    if op == "addmv":
        return (m,), [(m, k), (k,)]
    return (m, n), [(m,), (n,)]  # addr


@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addbmm", "addmv", "addr"])
@pytest.mark.parametrize("inplace", [False, True], ids=["functional", "inplace"])
@given(
    b=dims,
    m=dims,
    k=dims,
    n=dims,
    broadcast=st.booleans(),
    nan_self=st.booleans(),
    dtype=st.sampled_from(NUMBERS),
    data=st.data(),
    seed=seeds,
)
def test_add_products(op, inplace, b, m, k, n, broadcast, nan_self, dtype, data, seed):
    beta, alpha = _coefficients(dtype, data.draw)
    full, operands = _add_product_shapes(op, b, m, k, n)
    # self broadcasts to the product (never in place: the result would not fit)
    self_shape = full[-1:] if broadcast and not inplace else full
    self = make(seed, self_shape, dtype)
    if nan_self and beta == 0 and dtype.is_floating_point:
        self = torch.full_like(self, float("nan"))  # beta=0: torch ignores self entirely
    tensors = [self] + [make(seed + i + 1, s, dtype) for i, s in enumerate(operands)]
    name = f"{op}_" if inplace else op

    def fn(s, x, y):
        if inplace:
            return getattr(s.clone(), name)(x, y, beta=beta, alpha=alpha)
        return getattr(torch, op)(s, x, y, beta=beta, alpha=alpha)

    check_op(fn, tensors, expect_op=f"aten::{name}.default", **tol(dtype))


@pytest.mark.parametrize("op", ["outer", "ger"])
@given(
    m=dims,
    n=dims,
    dtypes=st.tuples(st.sampled_from([*NUMBERS, torch.bool]), st.sampled_from([*NUMBERS, torch.bool])),
    seed=seeds,
)
def test_outer(op, m, n, dtypes, seed):
    if op == "ger":
        dtypes = (dtypes[0], dtypes[0])  # ger does not promote
    tensors = [make(seed, (m,), dtypes[0]), make(seed + 1, (n,), dtypes[1])]
    check_op(getattr(torch, op), tensors, expect_op=f"aten::{op}.default", **tol(dtypes[0]))


EQUATIONS = [
    ("ij,jk->ik", [("i", "j"), ("j", "k")]),
    ("bij,bjk->bik", [("b", "i", "j"), ("b", "j", "k")]),
    ("ij,jk", [("i", "j"), ("j", "k")]),  # implicit output
    ("ba,ac", [("b", "a"), ("a", "c")]),  # implicit output is sorted: "bc"
    ("Bi,iA", [("B", "i"), ("i", "A")]),  # upper case first: "AB"
    ("...ij,...jk->...ik", [("e", "i", "j"), ("e", "j", "k")]),
    ("i j , j", [("i", "j"), ("j",)]),  # spaces
    ("ij->ji", [("i", "j")]),
    ("ij->", [("i", "j")]),
    ("bhqd,bhkd->bhqk", [("b", "h", "i", "j"), ("b", "h", "k", "j")]),
    ("i,j,k->ijk", [("i",), ("j",), ("k",)]),
]


@pytest.mark.parametrize("equation,labels", EQUATIONS, ids=[e for e, _ in EQUATIONS])
@given(
    sizes=st.fixed_dictionaries({c: dims for c in "ABabcehijk"}),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.float16, torch.int64, torch.int32]),
    seed=seeds,
)
def test_einsum(equation, labels, sizes, dtype, seed):
    tensors = [make(seed + i, [sizes[c] for c in lab], dtype) for i, lab in enumerate(labels)]
    check_op(
        at_least_1d(lambda *ts: torch.einsum(equation, *ts)),
        tensors,
        expect_op="aten::einsum.default",
        **tol(dtype),
    )


@given(
    shapes=st.tuples(st.lists(dims, max_size=3), st.lists(dims, max_size=3)),
    k=dims,
    dtype=st.sampled_from(NUMBERS),
    seed=seeds,
)
def test_inner(shapes, k, dtype, seed):
    a, b = shapes
    a = (*a, k) if a else ()
    b = (*b, k) if b else ()
    tensors = [make(seed, a, dtype), make(seed + 1, b, dtype)]
    check_op(at_least_1d(torch.inner), tensors, expect_op="aten::inner.default", **tol(dtype))


@given(batch=st.sampled_from([(), (3,), (2, 2)]), n=st.integers(1, 5), seed=st.integers(0, 1000))
def test_det(batch, n, seed):
    a = torch.randn(*batch, n, n, generator=torch.Generator().manual_seed(seed))
    check_op(torch.linalg.det, [a], expect_op="aten::linalg_det.default", atol=1e-4, rtol=1e-3)
    check_op(torch.det, [a], expect_op="aten::det.default", atol=1e-4, rtol=1e-3)


def test__linalg_det_result_only():
    a = torch.randn(2, 3, 3)
    check_op(lambda t: torch.ops.aten._linalg_det(t)[0], [a], expect_op="aten::_linalg_det.default", atol=1e-4, rtol=1e-3)


def _matrices(seed: int, batch, n: int, scale: float, kind: str) -> torch.Tensor:
    a = torch.randn(*batch, n, n, generator=torch.Generator().manual_seed(seed)) * scale
    if kind == "zero row" and n:
        a[..., 0, :] = 0  # det 0: sign 0, log|det| -inf
    elif kind == "negative" and n:  # det < 0: logdet is nan
        flip = torch.where(torch.linalg.det(a.double()) > 0, -1.0, 1.0)
        a[..., 0, :] = a[..., 0, :] * flip.unsqueeze(-1)
    return a


@given(
    batch=st.sampled_from([(), (3,), (2, 2)]),
    n=st.integers(0, 24),
    scale=st.sampled_from([1.0, 1e-3, 100.0]),  # 24 x 24 by 100: det ~ 1e60, Det alone overflows
    kind=st.sampled_from(["random", "zero row", "negative"]),
    seed=st.integers(0, 1000),
)
def test_slogdet_and_logdet(batch, n, scale, kind, seed):
    """sign and log|det| from Det on rows scaled by powers of two: no overflow, torch's nan/-inf."""
    a = _matrices(seed, batch, n, scale, kind)
    close = {"atol": 1e-4, "rtol": 1e-4}
    check_op(at_least_1d(torch.logdet), [a], expect_op="aten::logdet.default", **close)
    check_op(
        lambda t: tuple(r + torch.zeros(1) for r in torch.linalg.slogdet(t)),  # 0-d results made 1-d
        [a],
        expect_op="aten::linalg_slogdet.default",
        **close,
    )
    check_op(lambda t: torch.ops.aten._linalg_slogdet(t)[1] + torch.zeros(1), [a], expect_op="aten::_linalg_slogdet.default", **close)


@pytest.mark.parametrize("scale", [100.0, 1e-3])
def test_slogdet_where_the_determinant_leaves_float32(scale):
    """det ~ 1e60 or 1e-60: Det of the matrix itself gives inf or 0, the scaled rows do not."""
    a = _matrices(3, (2,), 24, scale, "random")
    assert not torch.isfinite(torch.linalg.det(a)).all() or (torch.linalg.det(a) == 0).any()
    check_op(at_least_1d(torch.logdet), [a.abs() + torch.eye(24) * 24 * scale], expect_op="aten::logdet.default", atol=1e-4, rtol=1e-4)
    check_op(lambda t: torch.linalg.slogdet(t)[1], [a], expect_op="aten::linalg_slogdet.default", atol=1e-4, rtol=1e-4)


EMPTY_DETERMINANTS = [
    ("det", torch.linalg.det), ("logdet", torch.logdet), ("slogdet", torch.linalg.slogdet),
    ("_linalg_slogdet", lambda t: torch.ops.aten._linalg_slogdet(t)[:2]),
]  # fmt: skip


@pytest.mark.parametrize("name, fn", EMPTY_DETERMINANTS, ids=[n for n, _ in EMPTY_DETERMINANTS])
@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 0, 0), (0, 2, 2), (2, 3, 1, 1)])
def test_determinants_of_empty_matrices_have_torch_shapes(name, fn, shape):
    """A 0 x 0 matrix has det 1, sign 1, log|det| 0, as 0-d or batched results; an empty batch
    gives empty results. onnxruntime 1.31.1's reductions of an empty tensor ignore negative
    axes: slogdet's graph gave (0, 0) for a 0 x 0 matrix and failed on 3 x 0 x 0 (issue 31)."""
    a = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    onx = tonnx.to_onnx(op_module(fn, 1), (a,))
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: a.numpy()})
    with torch.no_grad():
        want = fn(a)
    want = list(want) if isinstance(want, tuple) else [want]
    assert [g.shape for g in got] == [tuple(w.shape) for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("key", ["cdist", "cdist_mm", "pdist"])
@pytest.mark.parametrize("shape1, shape2", [((0, 3), (2, 3)), ((2, 0), (2, 0)), ((0, 0), (2, 0)), ((4, 5), (0, 3, 5))])
def test_distances_of_empty_inputs_have_torch_shapes(key, shape1, shape2):
    """Distances reduce the last axis of the differences, empty on onnxruntime 1.31.1 as well;
    an empty batch through the matrix product failed there (its fused MatMul)."""
    a = torch.randn(shape1, generator=torch.Generator().manual_seed(0))
    b = torch.randn(shape2, generator=torch.Generator().manual_seed(1))
    if key == "pdist":
        if len(shape2) > 2:
            pytest.skip("pdist takes one matrix")
        fn, inputs = torch.nn.functional.pdist, [a]
    else:
        mode = "use_mm_for_euclid_dist" if key == "cdist_mm" else "donot_use_mm_for_euclid_dist"
        fn, inputs = (lambda x, y: torch.cdist(x, y, compute_mode=mode)), [a, b]
    onx = tonnx.to_onnx(op_module(fn, len(inputs)), tuple(inputs))
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)})[0]
    want = fn(*inputs).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)


def test_slogdet_refuses_what_det_cannot_give():
    with pytest.raises(tonnx.UnsupportedError, match="float32 only"):
        tonnx.to_onnx(op_module(torch.logdet, 1), (torch.randn(3, 3, dtype=torch.float64),))
    with pytest.raises(tonnx.UnsupportedError, match="47 x 47"):
        tonnx.to_onnx(op_module(torch.logdet, 1), (torch.randn(47, 47),))
    with pytest.raises(tonnx.UnsupportedError, match="LU factors"):
        tonnx.to_onnx(op_module(lambda t: torch.ops.aten._linalg_slogdet(t)[2], 1), (torch.randn(3, 3),))


@given(
    batch=st.sampled_from([(), (0,), (3,), (2, 3)]),
    in1=dims,
    in2=dims,
    out=dims,
    bias=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.float16, torch.int64]),
    seed=seeds,
)
def test_bilinear(batch, in1, in2, out, bias, dtype, seed):
    """F.bilinear is torch's _trilinear(x1, W, x2, [1, 3], [0], [1, 2], [2, 3]): one Einsum."""
    tensors = [make(seed, (*batch, in1), dtype), make(seed + 2, (*batch, in2), dtype), make(seed + 1, (out, in1, in2), dtype)]
    if bias:
        tensors.append(make(seed + 3, (out,), dtype))
    # torch.export keeps bilinear; its decomposition reaches _trilinear
    onx = check_op(torch.nn.functional.bilinear, tensors, expect_op="aten::bilinear.default", **tol(dtype))
    assert "Einsum" in [n.op_type for n in onx.graph.node]


@given(seed=seeds, dtype=st.sampled_from([torch.float32, torch.int64]))
def test_trilinear_called_directly(seed, dtype):
    """Three operands, a dimension expanded in two of them, a kept dimension summed in none."""
    a, b, c = make(seed, (2, 3), dtype), make(seed + 1, (3, 4), dtype), make(seed + 2, (2, 4, 5), dtype)
    # total dims (2, 3, 4, 5): a expands 2, 3; b expands 0, 3; c expands 1; sum over 1 and 2
    check_op(
        lambda a, b, c: torch.ops.aten._trilinear(a, b, c, [2, 3], [0, 3], [1], [1, 2]),
        [a, b, c],
        expect_op="aten::_trilinear.default",
        **tol(dtype),
    )
