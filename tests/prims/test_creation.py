"""Hypothesis tests of the creation and conversion prims: torch eager against onnxruntime.

``empty*`` values are unspecified in torch, so their tests overwrite them with ``prims.fill``
and compare the shape, dtype and filled values.
"""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import check_op

from .test_elementwise import make, seeds, with_specials

P = torch.ops.prims

COVERS = {
    "prims::full.default",
    "prims::full_like.default",
    "prims::fill.default",
    "prims::scalar_tensor.default",
    "prims::empty.default",
    "prims::empty_strided.default",
    "prims::empty_permuted.default",
    "prims::iota.default",
    "prims::convert_element_type.default",
    "prims::copy_to.default",
    "prims::device_put.default",
}

DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.uint8, torch.bool]
shapes = st.lists(st.integers(1, 4), max_size=3).map(tuple)
values = st.one_of(st.integers(0, 100), st.floats(-100, 100, allow_nan=False, width=32))
CPU = torch.device("cpu")


@given(shape=shapes, dtype=st.sampled_from(DTYPES), value=values, seed=seeds)
def test_full_fill_scalar(shape, dtype, value, seed):
    """A fill value is rounded to the dtype as torch casts it (float to int truncates)."""
    if dtype == torch.uint8 and value < 0:
        value = -value
    x = make(seed, shape, torch.float32)
    kw = {"dtype": dtype, "device": CPU, "requires_grad": False}

    def model(t):
        return (
            P.full(list(shape), value, **kw),
            P.full_like(t, value, **kw),
            P.fill(P.convert_element_type(t, dtype), value),
            P.scalar_tensor(value, dtype=dtype, device=CPU),
        )

    keys = ["prims::full.default", "prims::full_like.default", "prims::fill.default", "prims::scalar_tensor.default"]
    check_op(model, [x], expect_op=keys)


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), value=values, seed=seeds)
def test_empty_family(shape, value, seed):
    kw = {"dtype": torch.float32, "device": CPU, "requires_grad": False}
    strides = [1] * len(shape)
    layout = list(range(len(shape)))[::-1]

    def model(t):
        return (
            P.fill(P.empty(list(shape), **kw), value),
            P.fill(P.empty_strided(list(shape), strides, **kw), value),
            P.fill(P.empty_permuted(list(shape), layout, **kw), value),
            P.device_put(t, CPU),
        )

    keys = ["prims::empty.default", "prims::empty_strided.default", "prims::empty_permuted.default", "prims::device_put.default"]
    check_op(model, [make(seed, shape, torch.float32)], expect_op=keys)


@given(
    length=st.integers(0, 9),
    start=st.integers(-5, 5),
    step=st.integers(-3, 3).filter(bool),
    dtype=st.sampled_from([torch.int64, torch.int32, torch.int16]),
)
def test_iota(length, start, step, dtype):
    kw = {"dtype": dtype, "device": CPU, "requires_grad": False}
    check_op(lambda t: (P.iota(length, start=start, step=step, **kw), t + 1), [torch.zeros(1)], expect_op="prims::iota.default")


@given(batch=st.integers(2, 5), other=st.integers(2, 7))
def test_iota_dynamic_length(batch, other):
    def model(t):
        return P.iota(t.shape[0], start=3, step=2, dtype=torch.int64, device=CPU, requires_grad=False)

    check_op(
        model,
        [torch.zeros(batch)],
        expect_op="prims::iota.default",
        dynamic_shapes=({0: "batch"},),
        other_inputs=[(torch.zeros(other),)],
    )


@given(
    shape=shapes,
    source=st.sampled_from(DTYPES),
    target=st.sampled_from(DTYPES),
    specials=st.booleans(),
    seed=seeds,
)
def test_convert_element_type(shape, source, target, specials, seed):
    """Casts between every pair; floats to ints truncate toward zero (in range only)."""
    low = 0 if torch.uint8 in (source, target) else -100
    x = make(seed, shape, source, low, 100)
    if specials and source.is_floating_point and target.is_floating_point:
        x = with_specials(x, seed)
    check_op(lambda t: P.convert_element_type(t, target), [x], expect_op="prims::convert_element_type.default")


@given(shape=shapes, source=st.sampled_from(DTYPES), target=st.sampled_from(DTYPES), seed=seeds)
def test_copy_to(shape, source, target, seed):
    """b's values written into a (a's dtype, b broadcast from fewer dims); a read afterwards."""
    b = make(seed, shape, source, 0, 50)

    def model(t):
        a = P.full([1, *shape], 0, dtype=target, device=CPU, requires_grad=False)
        written = P.copy_to(a, t)
        return written, P.convert_element_type(a, torch.float64)

    check_op(model, [b], expect_op="prims::copy_to.default")
