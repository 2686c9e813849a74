"""Hypothesis tests of the creation converters: torch eager against onnxruntime.

``empty*`` results are undefined, so they are checked through ``fill_`` (shape and dtype
still come from the converter). In-place variants run on ``x * 1``, a fresh intermediate.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, check_op

COVERS = {
    "aten::zeros.default",
    "aten::ones.default",
    "aten::full.default",
    "aten::empty.memory_format",
    "aten::empty_strided.default",
    "aten::zeros_like.default",
    "aten::ones_like.default",
    "aten::full_like.default",
    "aten::empty_like.default",
    "aten::new_zeros.default",
    "aten::new_ones.default",
    "aten::new_full.default",
    "aten::new_empty.default",
    "aten::new_empty_strided.default",
    "aten::scalar_tensor.default",
    "aten::fill.Scalar",
    "aten::fill.Tensor",
    "aten::fill_.Scalar",
    "aten::fill_.Tensor",
    "aten::zero.default",
    "aten::zero_.default",
    "aten::arange.default",
    "aten::arange.start",
    "aten::arange.start_step",
    "aten::linspace.default",
    "aten::eye.default",
    "aten::eye.m",
    "aten::tril.default",
    "aten::triu.default",
    "aten::tril_.default",
    "aten::triu_.default",
}

FLOATS = [torch.float32, torch.float64, torch.float16]
INTS = [torch.int64, torch.int32]
ALL = [*FLOATS, *INTS, torch.bool]
dims = st.integers(1, 4)
sizes = st.lists(dims, min_size=1, max_size=4)
seeds = st.integers(0, 2**16)


def make(seed: int, shape, dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=gen) * 8 - 4).to(dtype)
    return torch.randint(-9, 10, shape, generator=gen).to(dtype)


def fill_value(dtype: torch.dtype):
    """A fill value of the python type matching ``dtype``."""
    if dtype == torch.bool:
        return st.booleans()
    if dtype.is_floating_point:
        return st.floats(-100, 100, width=16 if dtype == torch.float16 else 32)
    return st.integers(-1000, 1000)


def fresh(x: torch.Tensor) -> torch.Tensor:
    return x * 1


# -- filled tensors --------------------------------------------------------------------------

SIZED = {
    "aten::zeros.default": lambda x, size, v, dt: torch.zeros(size, dtype=dt),
    "aten::ones.default": lambda x, size, v, dt: torch.ones(size, dtype=dt),
    "aten::full.default": lambda x, size, v, dt: torch.full(size, v, dtype=dt),
    "aten::empty.memory_format": lambda x, size, v, dt: torch.empty(size, dtype=dt).fill_(v),
    "aten::empty_strided.default": lambda x, size, v, dt: torch.empty_strided(
        size, [1] * len(size), dtype=dt
    ).fill_(v),
    "aten::new_zeros.default": lambda x, size, v, dt: x.new_zeros(size, dtype=dt),
    "aten::new_ones.default": lambda x, size, v, dt: x.new_ones(size),
    "aten::new_full.default": lambda x, size, v, dt: x.new_full(size, v, dtype=dt),
    "aten::new_empty.default": lambda x, size, v, dt: x.new_empty(size, dtype=dt).fill_(v),
    "aten::new_empty_strided.default": lambda x, size, v, dt: x.new_empty_strided(
        size, [1] * len(size), dtype=dt
    ).fill_(v),
}


@pytest.mark.parametrize("key", sorted(SIZED))
@given(size=sizes, data=st.data(), dtype=st.sampled_from(ALL), seed=seeds)
def test_sized(key, size, data, dtype, seed):
    value = data.draw(fill_value(dtype))
    op = SIZED[key]
    x = make(seed, (2,), data.draw(st.sampled_from(ALL)))
    check_op(lambda x: op(x, size, value, dtype), [x], expect_op=key)


@given(size=sizes, value=st.one_of(st.booleans(), st.integers(-5, 5), st.floats(-5, 5)))
def test_full_infers_dtype(size, value):
    x = make(0, (2,), torch.float32)
    check_op(lambda x: torch.full(size, value), [x], expect_op="aten::full.default")


LIKE = {
    "aten::zeros_like.default": lambda x, v, dt: torch.zeros_like(x, dtype=dt),
    "aten::ones_like.default": lambda x, v, dt: torch.ones_like(x, dtype=dt),
    "aten::full_like.default": lambda x, v, dt: torch.full_like(x, v, dtype=dt),
    "aten::empty_like.default": lambda x, v, dt: torch.empty_like(x, dtype=dt).fill_(v),
    "aten::fill.Scalar": lambda x, v, dt: torch.fill(x, v),
    "aten::fill_.Scalar": lambda x, v, dt: fresh(x).fill_(v),
    "aten::fill.Tensor": lambda x, v, dt: torch.fill(x, torch.scalar_tensor(v)),
    "aten::fill_.Tensor": lambda x, v, dt: fresh(x).fill_(torch.scalar_tensor(v, dtype=dt)),
    "aten::zero.default": lambda x, v, dt: torch.ops.aten.zero(x),
    "aten::zero_.default": lambda x, v, dt: fresh(x).zero_(),
    "aten::scalar_tensor.default": lambda x, v, dt: x.masked_fill(x != x, torch.scalar_tensor(v)),
}


@pytest.mark.parametrize("key", sorted(LIKE))
@given(shape=sizes, data=st.data(), seed=seeds)
def test_like(key, shape, data, seed):
    inplace = "_." in key or key == "aten::zero_.default"
    dtype = data.draw(st.sampled_from([d for d in ALL if not (inplace and d == torch.bool)]))
    out_dtype = (
        None if "fill" in key or "zero" in key else data.draw(st.none() | st.sampled_from(ALL))
    )
    value = data.draw(fill_value(out_dtype or dtype))
    op = LIKE[key]
    if key == "aten::scalar_tensor.default":
        dtype = data.draw(st.sampled_from(FLOATS))  # x != x is all False: a masked_fill no-op
    check_op(lambda x: op(x, value, out_dtype), [make(seed, shape, dtype)], expect_op=key)


def test_zero_dim_results():
    x = make(0, (2,), torch.float32)
    check_op(lambda x: torch.full((), 3.5), [x], expect_op="aten::full.default")


# -- arange, linspace, eye -------------------------------------------------------------------


def _nonzero_step(low: float, high: float):
    return st.floats(low, high).filter(lambda s: abs(s) >= 0.1)


@given(
    start=st.floats(-10, 10),
    length=st.floats(0.5, 15),
    step=_nonzero_step(0.1, 3),
    negative=st.booleans(),
    dtype=st.sampled_from([None, *FLOATS, *INTS]),
)
def test_arange_float(start, length, step, negative, dtype):
    end = start - length if negative else start + length
    step = -step if negative else step
    if dtype is not None and not dtype.is_floating_point and abs(step) < 1:
        step = 1.0 if step > 0 else -1.0  # torch truncates the step for integer results
    tol = {"atol": 2e-2, "rtol": 2e-2} if dtype == torch.float16 else {"atol": 1e-5, "rtol": 1e-5}
    x = make(0, (2,), torch.float32)
    check_op(
        lambda x: torch.arange(start, end, step, dtype=dtype),
        [x],
        expect_op="aten::arange.start_step",
        **tol,
    )


ARANGES = {
    "aten::arange.default": lambda s, e, st_, dt: torch.arange(e, dtype=dt),
    "aten::arange.start": lambda s, e, st_, dt: torch.arange(s, e, dtype=dt),
    "aten::arange.start_step": lambda s, e, st_, dt: torch.arange(s, e, st_, dtype=dt),
}


@pytest.mark.parametrize("key", sorted(ARANGES))
@given(
    start=st.integers(-20, 20),
    length=st.integers(1, 30),
    step=st.integers(1, 5),
    negative=st.booleans(),
    dtype=st.sampled_from([None, torch.float32, torch.float64, *INTS]),
)
def test_arange_int(key, start, length, step, negative, dtype):
    if key != "aten::arange.start_step":
        negative, step = False, 1
    if key == "aten::arange.default":
        start = 0
    end = start - length if negative else start + length
    op = ARANGES[key]
    x = make(0, (2,), torch.float32)
    check_op(lambda x: op(start, end, -step if negative else step, dtype), [x], expect_op=key)


@pytest.mark.parametrize(
    ("make_range", "key"),
    [
        (lambda n: torch.arange(n), "aten::arange.default"),
        (lambda n: torch.arange(2, n), "aten::arange.start"),
        (lambda n: torch.arange(2, n, 3), "aten::arange.start_step"),
        (lambda n: torch.arange(0, n, 0.7), "aten::arange.start_step"),
        (lambda n: torch.arange(n, dtype=torch.float16), "aten::arange.default"),
        (lambda n: torch.arange(1.5, n, 2, dtype=torch.int32), "aten::arange.start_step"),
    ],
)
def test_arange_dynamic(make_range, key):
    class Model(torch.nn.Module):
        def forward(self, x):
            return make_range(x.shape[0])

    inputs = [(make(i, (n, 2), torch.float32),) for i, n in enumerate([7, 3, 12, 2])]
    check_model(
        Model(),
        inputs[0],
        other_inputs=inputs[1:],
        dynamic_shapes=({0: "batch"},),
        expect_ops=[key],
    )


@given(
    start=st.floats(-10, 10),
    end=st.floats(-10, 10),
    steps=st.integers(0, 60),
    dtype=st.sampled_from([None, *FLOATS]),
)
def test_linspace(start, end, steps, dtype):
    tol = {"atol": 2e-2, "rtol": 2e-2} if dtype == torch.float16 else {"atol": 1e-5, "rtol": 1e-5}
    x = make(0, (2,), torch.float32)
    check_op(
        lambda x: torch.linspace(start, end, steps, dtype=dtype),
        [x],
        expect_op="aten::linspace.default",
        **tol,
    )


def test_linspace_integer_is_unsupported():
    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.linspace(0, 10, 7, dtype=torch.int64)

    with pytest.raises(tonnx.UnsupportedError, match="linspace"):
        tonnx.to_onnx(Model(), (make(0, (2,), torch.float32),))


@pytest.mark.parametrize("key", ["aten::eye.default", "aten::eye.m"])
@given(n=st.integers(1, 6), m=st.integers(1, 6), dtype=st.sampled_from(ALL))
def test_eye(key, n, m, dtype):
    x = make(0, (2,), torch.float32)
    if key == "aten::eye.default":
        check_op(lambda x: torch.eye(n, dtype=dtype), [x], expect_op="aten::eye.default")
    else:
        check_op(lambda x: torch.eye(n, m, dtype=dtype), [x], expect_op="aten::eye.m")


def test_sizes_dynamic():
    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(x.shape[0], 3, dtype=torch.int32)

    class Eye(torch.nn.Module):
        def forward(self, x):
            return torch.eye(x.shape[0], x.shape[1] + 1)

    inputs = [(make(i, (n, n + 1), torch.float32),) for i, n in enumerate([4, 2, 6])]
    for model in (Model(), Eye()):
        check_model(model, inputs[0], other_inputs=inputs[1:], dynamic_shapes=({0: "a", 1: "b"},))


# -- tril, triu ------------------------------------------------------------------------------

TRILUS = {
    "aten::tril.default": lambda x, k: torch.tril(x, k),
    "aten::triu.default": lambda x, k: torch.triu(x, k),
    "aten::tril_.default": lambda x, k: fresh(x).tril_(k),
    "aten::triu_.default": lambda x, k: fresh(x).triu_(k),
}


@pytest.mark.parametrize("key", sorted(TRILUS))
@given(
    shape=st.lists(dims, min_size=2, max_size=4),
    diagonal=st.integers(-5, 5),
    dtype=st.sampled_from([*ALL, torch.int8, torch.uint8, torch.int16]),
    seed=seeds,
)
def test_trilu(key, shape, diagonal, dtype, seed):
    if dtype == torch.bool and "_." in key:
        dtype = torch.int64
    op = TRILUS[key]
    check_op(lambda x: op(x, diagonal), [make(seed, shape, dtype)], expect_op=key)
