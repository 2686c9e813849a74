"""Hypothesis tests of the reduction, softmax and cumulative converters."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from tonnx.testing import check_op

COVERS = {
    "aten::sum.default",
    "aten::sum.dim_IntList",
    "aten::nansum.default",
    "aten::mean.default",
    "aten::mean.dim",
    "aten::prod.default",
    "aten::prod.dim_int",
    "aten::count_nonzero.default",
    "aten::count_nonzero.dim_IntList",
    "aten::amax.default",
    "aten::amin.default",
    "aten::aminmax.default",
    "aten::max.default",
    "aten::min.default",
    "aten::max.dim",
    "aten::min.dim",
    "aten::argmax.default",
    "aten::argmin.default",
    "aten::any.default",
    "aten::any.dim",
    "aten::any.dims",
    "aten::all.default",
    "aten::all.dim",
    "aten::all.dims",
    "aten::_is_all_true.default",
    "aten::_is_any_true.default",
    "aten::var.correction",
    "aten::var.dim",
    "aten::std.correction",
    "aten::std.dim",
    "aten::var_mean.correction",
    "aten::var_mean.dim",
    "aten::std_mean.correction",
    "aten::std_mean.dim",
    "aten::logsumexp.default",
    "aten::special_logsumexp.default",
    "aten::linalg_vector_norm.default",
    "aten::norm.ScalarOpt_dim",
    "aten::norm.Scalar",
    "aten::cumsum.default",
    "aten::cumsum_.default",
    "aten::diff.default",
    "aten::cumprod.default",
    "aten::cumprod_.default",
    "aten::_softmax.default",
    "aten::softmax.int",
    "aten::_log_softmax.default",
    "aten::log_softmax.int",
}

A = torch.ops.aten
FLOATS = [torch.float32, torch.float64, torch.float16]
INTS = [torch.int64, torch.int32]
ALL = [*FLOATS, *INTS, torch.bool]
seeds = st.integers(0, 2**16)
shapes = st.lists(st.integers(1, 4), max_size=4)
opsets = st.sampled_from([18, 20, 23])


def make(seed: int, shape, dtype: torch.dtype, *, ties: bool = False, nan: bool = False):
    """Random values; ``ties`` draws few distinct values, ``nan`` puts NaN in some places."""
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(-4, 5, shape, generator=gen).to(dtype)
    values = torch.randint(-2, 3, shape, generator=gen).double() if ties else torch.randn(shape, generator=gen, dtype=torch.float64)
    if nan:
        values[torch.rand(shape, generator=gen) < 0.2] = math.nan
    return values.to(dtype)


@st.composite
def dim_lists(draw, rank: int):
    """A non-empty list of distinct dims of a tensor of ``rank`` (0-d tensors take 0 or -1)."""
    if rank == 0:
        return draw(st.sampled_from([[0], [-1]]))
    axes = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    return [a - rank if draw(st.booleans()) else a for a in axes]


def no_0d(fn, tensors):
    """(fn, tensors) where no input nor result is 0-d: 0-d inputs are fed as (1,) and
    squeezed inside, 0-d results unsqueezed.

    Works around tonnx.testing turning 0-d arrays into shape (1,) (np.ascontiguousarray),
    for the inputs it feeds as for the results it compares.
    """
    scalars = [t.dim() == 0 for t in tensors]

    def one(t):
        return t.unsqueeze(0) if isinstance(t, torch.Tensor) and t.dim() == 0 else t

    def wrapped(*args):
        result = fn(*(a.squeeze(0) if s else a for a, s in zip(args, scalars)))
        return tuple(one(t) for t in result) if isinstance(result, tuple) else one(result)

    return wrapped, [t.reshape(1) if s else t for t, s in zip(tensors, scalars)]


def tol(*dtypes) -> dict:
    if torch.float16 in dtypes:
        return {"atol": 1e-2, "rtol": 1e-2}
    return {"atol": 1e-5, "rtol": 1e-4}


def run(fn, tensors, key: str, **kwargs):
    fn, tensors = no_0d(fn, tensors)
    check_op(fn, tensors, expect_op=key, **tol(*[t.dtype for t in tensors]), **kwargs)


# -- sum, mean, prod, nansum, count_nonzero ---------------------------------------------------

ACCUMULATIONS = {
    "aten::sum.default": lambda x, dims, keep, dtype: A.sum.default(x, dtype=dtype),
    "aten::sum.dim_IntList": lambda x, dims, keep, dtype: A.sum.dim_IntList(x, dims, keep, dtype=dtype),
    "aten::mean.default": lambda x, dims, keep, dtype: A.mean.default(x, dtype=dtype),
    "aten::mean.dim": lambda x, dims, keep, dtype: A.mean.dim(x, dims, keep, dtype=dtype),
    "aten::prod.default": lambda x, dims, keep, dtype: A.prod.default(x, dtype=dtype),
    "aten::prod.dim_int": lambda x, dims, keep, dtype: A.prod.dim_int(x, dims[0], keep, dtype=dtype),
    "aten::nansum.default": lambda x, dims, keep, dtype: A.nansum.default(x, dims, keep, dtype=dtype),
    "aten::count_nonzero.default": lambda x, dims, keep, dtype: A.count_nonzero.default(x, dims[0]),
    "aten::count_nonzero.dim_IntList": lambda x, dims, keep, dtype: A.count_nonzero.dim_IntList(x, dims),
}


@pytest.mark.parametrize("key", sorted(ACCUMULATIONS))
@given(
    data=st.data(),
    shape=shapes,
    dtype=st.sampled_from(ALL),
    keep=st.booleans(),
    cast_to=st.sampled_from([None, torch.float64, torch.float32]),
    empty_dims=st.booleans(),
    seed=seeds,
)
def test_accumulations(key, data, shape, dtype, keep, cast_to, empty_dims, seed):
    dims = data.draw(dim_lists(len(shape)))
    if empty_dims and key in ("aten::sum.dim_IntList", "aten::mean.dim"):
        dims = []  # torch: an empty list reduces every dimension
    if key.startswith("aten::mean") and cast_to is None and not dtype.is_floating_point:
        cast_to = torch.float32  # torch.mean needs a float dtype
    x = make(seed, shape, dtype, nan=key == "aten::nansum.default")
    fn = ACCUMULATIONS[key]
    run(lambda t: fn(t, dims, keep, cast_to), [x], key)


# -- max, min and their indices ---------------------------------------------------------------

EXTREMA = {
    "aten::amax.default": lambda x, dims, keep: A.amax.default(x, dims, keep),
    "aten::amin.default": lambda x, dims, keep: A.amin.default(x, [] if len(dims) > 1 else dims, keep),
    "aten::aminmax.default": lambda x, dims, keep: A.aminmax.default(x, dim=dims[0], keepdim=keep),
    "aten::max.default": lambda x, dims, keep: A.max.default(x),
    "aten::min.default": lambda x, dims, keep: A.min.default(x),
    "aten::max.dim": lambda x, dims, keep: A.max.dim(x, dims[0], keep),
    "aten::min.dim": lambda x, dims, keep: A.min.dim(x, dims[0], keep),
    "aten::argmax.default": lambda x, dims, keep: A.argmax.default(x, dims[0], keep),
    "aten::argmin.default": lambda x, dims, keep: A.argmin.default(x, None if len(dims) > 1 else dims[0], keep),
}


@pytest.mark.parametrize("key", sorted(EXTREMA))
@given(
    data=st.data(),
    shape=shapes,
    dtype=st.sampled_from([*ALL, torch.int16, torch.int8, torch.uint8]),
    keep=st.booleans(),
    nan=st.booleans(),
    seed=seeds,
)
def test_extrema(key, data, shape, dtype, keep, nan, seed):
    if "arg" in key and dtype == torch.bool:
        dtype = torch.uint8  # torch's argmax/argmin reject bool
    dims = data.draw(dim_lists(len(shape)))
    # few distinct values, so ties test that the first index wins; NaN must propagate
    x = make(seed, shape, dtype, ties=True, nan=nan)
    fn = EXTREMA[key]
    run(lambda t: fn(t, dims, keep), [x], key)


# -- any, all ---------------------------------------------------------------------------------

LOGICAL = {
    "aten::any.default": lambda x, dims, keep: A.any.default(x),
    "aten::any.dim": lambda x, dims, keep: A.any.dim(x, dims[0], keep),
    "aten::any.dims": lambda x, dims, keep: A.any.dims(x, dims, keep),
    "aten::all.default": lambda x, dims, keep: A.all.default(x),
    "aten::all.dim": lambda x, dims, keep: A.all.dim(x, dims[0], keep),
    "aten::all.dims": lambda x, dims, keep: A.all.dims(x, dims, keep),
}


@pytest.mark.parametrize("key", sorted(LOGICAL))
@given(
    data=st.data(),
    shape=shapes,
    dtype=st.sampled_from([*ALL, torch.uint8]),
    keep=st.booleans(),
    dims_kind=st.sampled_from(["some", "none", "empty"]),
    opset=opsets,
    seed=seeds,
)
def test_any_all(key, data, shape, dtype, keep, dims_kind, opset, seed):
    dims = data.draw(dim_lists(len(shape)))
    if key.endswith(".dims") and dims_kind != "some":
        dims = None if dims_kind == "none" else []  # None: every dim; []: none at all
    x = make(seed, shape, dtype, ties=True, nan=True)
    fn = LOGICAL[key]
    run(lambda t: fn(t, dims, keep), [x], key, target_opset=opset)


@pytest.mark.parametrize("key", ["aten::_is_all_true.default", "aten::_is_any_true.default"])
@given(shape=shapes, density=st.sampled_from([0.0, 0.5, 1.0]), opset=opsets, seed=seeds)
def test_is_all_any_true(key, shape, density, opset, seed):
    """torch._check_tensor_all's reduction (transformers' torch_compilable_check) of a bool tensor."""
    x = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < density
    fn = A._is_all_true.default if "all" in key else A._is_any_true.default
    run(fn, [x], key, target_opset=opset)


# -- variance and standard deviation ----------------------------------------------------------

MOMENTS = {
    "aten::var.correction": lambda x, dims, c, keep: A.var.correction(x, dims, correction=c, keepdim=keep),
    "aten::var.dim": lambda x, dims, c, keep: A.var.dim(x, dims, c != 0, keep),
    "aten::std.correction": lambda x, dims, c, keep: A.std.correction(x, dims, correction=c, keepdim=keep),
    "aten::std.dim": lambda x, dims, c, keep: A.std.dim(x, dims, c != 0, keep),
    "aten::var_mean.correction": lambda x, dims, c, keep: A.var_mean.correction(x, dims, correction=c, keepdim=keep),
    "aten::var_mean.dim": lambda x, dims, c, keep: A.var_mean.dim(x, dims, c != 0, keep),
    "aten::std_mean.correction": lambda x, dims, c, keep: A.std_mean.correction(x, dims, correction=c, keepdim=keep),
    "aten::std_mean.dim": lambda x, dims, c, keep: A.std_mean.dim(x, dims, c != 0, keep),
}


@pytest.mark.parametrize("key", sorted(MOMENTS))
@given(
    data=st.data(),
    shape=shapes,
    dtype=st.sampled_from(FLOATS),
    correction=st.sampled_from([None, 0, 1, 2, 0.5]),
    all_dims=st.booleans(),
    keep=st.booleans(),
    seed=seeds,
)
def test_moments(key, data, shape, dtype, correction, all_dims, keep, seed):
    dims = None if all_dims else data.draw(dim_lists(len(shape)))
    if key.endswith(".dim"):
        correction = 1 if correction is None else int(correction != 0)
    x = make(seed, shape, dtype)
    fn = MOMENTS[key]
    run(lambda t: fn(t, dims, correction, keep), [x], key)


def test_variance_with_dynamic_sizes():
    from tonnx.testing import check_model

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.var(x, dim=(0, 2), correction=1), torch.std(x, dim=1, keepdim=True)

    x, other = torch.randn(3, 4, 5), torch.randn(6, 2, 7)
    check_model(
        Model(),
        (x,),
        dynamic_shapes=({0: "a", 1: "b", 2: "c"},),
        other_inputs=[(other,)],
        expect_ops=["aten::var.correction", "aten::std.dim"],
    )


# -- logsumexp, norms -------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["aten::logsumexp.default", "aten::special_logsumexp.default"])
@given(
    data=st.data(),
    shape=shapes,
    dtype=st.sampled_from([*FLOATS, torch.int64]),
    keep=st.booleans(),
    infinite=st.booleans(),
    seed=seeds,
)
def test_logsumexp(key, data, shape, dtype, keep, infinite, seed):
    dims = data.draw(dim_lists(len(shape)))
    x = make(seed, shape, dtype) * 10
    if infinite and dtype.is_floating_point and x.dim():
        x[..., 0] = -math.inf  # rows of -inf give -inf, as torch's shift handles them
    op = A.logsumexp.default if key == "aten::logsumexp.default" else A.special_logsumexp.default
    run(lambda t: op(t, dims, keep), [x], key)


NORMS = {
    "aten::linalg_vector_norm.default": lambda x, p, dims, keep, dtype: A.linalg_vector_norm.default(x, p, dims, keep, dtype=dtype),
    "aten::norm.ScalarOpt_dim": lambda x, p, dims, keep, dtype: A.norm.ScalarOpt_dim(x, p, dims or [], keep),
    "aten::norm.Scalar": lambda x, p, dims, keep, dtype: A.norm.Scalar(x, p),
}


@pytest.mark.parametrize("key", sorted(NORMS))
@given(
    data=st.data(),
    shape=shapes,
    dtype=st.sampled_from(FLOATS),
    ord=st.sampled_from([2, 1, math.inf, -math.inf, 0, 3, 0.5, -1.5]),
    all_dims=st.booleans(),
    keep=st.booleans(),
    cast_to=st.sampled_from([None, torch.float64]),
    seed=seeds,
)
def test_norms(key, data, shape, dtype, ord, all_dims, keep, cast_to, seed):
    dims = None if all_dims else data.draw(dim_lists(len(shape)))
    x = make(seed, shape, dtype)
    fn = NORMS[key]
    run(lambda t: fn(t, ord, dims, keep, cast_to), [x], key)


# -- cumulative ops ---------------------------------------------------------------------------

CUMULATIVE = {
    "aten::cumsum.default": lambda x, dim, dtype: A.cumsum.default(x, dim, dtype=dtype),
    "aten::cumsum_.default": lambda x, dim, dtype: A.clone.default(x).cumsum_(dim),
    "aten::cumprod.default": lambda x, dim, dtype: A.cumprod.default(x, dim, dtype=dtype),
    "aten::cumprod_.default": lambda x, dim, dtype: A.clone.default(x).cumprod_(dim),
}


@pytest.mark.parametrize("key", sorted(CUMULATIVE))
@given(
    data=st.data(),
    shape=st.lists(st.integers(1, 5), max_size=3),
    dtype=st.sampled_from(ALL),
    cast_to=st.sampled_from([None, torch.float64, torch.int64]),
    seed=seeds,
)
def test_cumulative(key, data, shape, dtype, cast_to, seed):
    rank = len(shape)
    dim = data.draw(st.integers(-max(rank, 1), max(rank, 1) - 1))
    if key.endswith("_.default") and dtype == torch.bool:
        dtype = torch.int64  # in place, the result keeps the input's dtype
    x = make(seed, shape, dtype)
    fn = CUMULATIVE[key]
    run(lambda t: fn(t, dim, cast_to), [x], key)


@given(
    data=st.data(),
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    dtype=st.sampled_from(ALL),
    n=st.integers(1, 3),
    ends=st.sampled_from(["none", "prepend", "append", "both"]),
    seed=seeds,
)
def test_diff(data, shape, dtype, n, ends, seed):
    rank = len(shape)
    dim = data.draw(st.integers(-rank, rank - 1))
    x = make(seed, shape, dtype)
    edge = list(shape)
    edge[dim] = 2
    tensors = [x]
    if ends in ("prepend", "both"):
        tensors.append(make(seed + 1, edge, dtype))
    if ends in ("append", "both"):
        tensors.append(make(seed + 2, edge, dtype))

    def fn(x, *extra):
        it = iter(extra)
        prepend = next(it) if ends in ("prepend", "both") else None
        append = next(it) if ends in ("append", "both") else None
        return torch.diff(x, n=n, dim=dim, prepend=prepend, append=append)

    assume(shape[dim] + 2 * len(tensors[1:]) > n)  # else torch's result is empty
    run(fn, tensors, "aten::diff.default")


def test_cumprod_with_a_dynamic_axis():
    from tonnx.testing import check_model

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.cumprod(x, 0)

    check_model(
        Model(),
        (torch.randn(4, 3),),
        dynamic_shapes=({0: "n"},),
        other_inputs=[(torch.randn(9, 3),)],
        expect_ops=["aten::cumprod.default"],
    )


# -- softmax ----------------------------------------------------------------------------------

SOFTMAXES = {
    "aten::_softmax.default": lambda x, dim, dtype: A._softmax.default(x, dim, False),
    "aten::softmax.int": lambda x, dim, dtype: A.softmax.int(x, dim, dtype),
    "aten::_log_softmax.default": lambda x, dim, dtype: A._log_softmax.default(x, dim, False),
    "aten::log_softmax.int": lambda x, dim, dtype: A.log_softmax.int(x, dim, dtype),
}


@pytest.mark.parametrize("key", sorted(SOFTMAXES))
@given(
    data=st.data(),
    shape=shapes,
    dtype=st.sampled_from(FLOATS),
    cast_to=st.sampled_from([None, torch.float64]),
    seed=seeds,
)
def test_softmax(key, data, shape, dtype, cast_to, seed):
    rank = len(shape)
    dim = data.draw(st.integers(-max(rank, 1), max(rank, 1) - 1))
    x = make(seed, shape, dtype) * 5
    fn = SOFTMAXES[key]
    run(lambda t: fn(t, dim, cast_to), [x], key)


@pytest.mark.parametrize("key", ["aten::_softmax.default", "aten::_log_softmax.default"])
@given(
    data=st.data(),
    shape=st.lists(st.integers(0, 4), min_size=3, max_size=5),
    dtype=st.sampled_from(FLOATS),
    dynamic=st.booleans(),
    seed=seeds,
)
def test_softmax_inner_axis_on_a_3d_view(key, data, shape, dtype, dynamic, seed):
    """A softmax over an axis with two or more dimensions after it runs on the (before,
    axis, after) view of its input (onnxruntime's transpose of the 4-D yolo head was 4x
    slower); with static and dynamic shapes, zero-sized dimensions included."""
    from tonnx.testing import check_model

    rank = len(shape)
    dim = data.draw(st.integers(0, rank - 3)) - data.draw(st.sampled_from([0, rank]))
    x = make(seed, shape, dtype) * 5
    fn = SOFTMAXES[key]

    class Model(torch.nn.Module):
        def forward(self, t):
            return fn(t, dim, None)

    dynamic_shapes = ({i: torch.export.Dim.AUTO for i in range(rank)},) if dynamic else None
    onx = check_model(Model(), (x,), dynamic_shapes=dynamic_shapes, expect_ops=[key], **tol(dtype))
    op_type = "Softmax" if "_softmax" in key and "log" not in key else "LogSoftmax"
    if x.numel() == 0:
        return  # the builder may fold an empty result
    (node,) = [n for n in onx.graph.node if n.op_type == op_type]
    producers = {o: n.op_type for n in onx.graph.node for o in n.output}
    assert producers.get(node.input[0]) == "Reshape" and node.attribute[0].i == 1, "axis 1 of the 3-D view"
