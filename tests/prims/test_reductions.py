"""Hypothesis tests of the reduction prims: torch eager against onnxruntime.

``prims.sum``/``prod`` of an integer tensor: the exported graph (torch's meta) keeps the
input dtype where torch's eager kernel returns int64; the models cast the eager result to
the input dtype, so the values are compared either way.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx import UnsupportedError
from tonnx.testing import check_op

from .test_elementwise import FLOATS, INTS, make, seeds, tol, with_specials

P = torch.ops.prims

COVERS = {
    "prims::sum.default",
    "prims::prod.default",
    "prims::amax.default",
    "prims::amin.default",
    "prims::var.default",
}


@st.composite
def shape_and_dims(draw, min_rank: int = 1):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=min_rank, max_size=4)))
    # prims take non-negative dims only
    return shape, draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))


@given(case=shape_and_dims(), dtype=st.sampled_from([*FLOATS, *INTS]), seed=seeds)
def test_sum_prod_amax_amin(case, dtype, seed):
    shape, dims = case
    x = make(seed, shape, dtype, -2, 2)

    def model(t):
        return (
            P.sum(t, dims).to(dtype),
            P.prod(t, dims).to(dtype),
            P.amax(t, dims),
            P.amin(t, dims),
        )

    keys = ["prims::sum.default", "prims::prod.default", "prims::amax.default", "prims::amin.default"]
    check_op(model, [x], expect_op=keys, **tol(dtype))


@given(case=shape_and_dims(), dtype=st.sampled_from(FLOATS), seed=seeds)
def test_amax_amin_nan(case, dtype, seed):
    """A nan in a reduced slice makes the result nan, as in torch; infinities stay."""
    shape, dims = case
    x = with_specials(make(seed, shape, dtype), seed)
    check_op(lambda t: (P.amax(t, dims), P.amin(t, dims)), [x], expect_op="prims::amax.default")


@given(
    case=shape_and_dims(),
    dtype=st.sampled_from(FLOATS),
    correction=st.sampled_from([0, 1, 2.5]),
    seed=seeds,
)
def test_var(case, dtype, correction, seed):
    """Bessel's and other corrections; a divisor <= 0 gives inf/nan like torch."""
    shape, dims = case
    x = make(seed, shape, dtype, -3, 3)
    check_op(
        lambda t: P.var(t, dims, correction), [x], expect_op="prims::var.default", **tol(dtype)
    )


@given(batch=st.integers(2, 4), other=st.integers(2, 6), seed=seeds)
def test_var_dynamic(batch, other, seed):
    """The number of reduced values is read at run time when the dim is dynamic."""
    x, y = make(seed, (batch, 3), torch.float32), make(seed + 1, (other, 3), torch.float32)
    check_op(
        lambda t: P.var(t, [0], 1.0),
        [x],
        expect_op="prims::var.default",
        dynamic_shapes=({0: "batch"},),
        other_inputs=[(y,)],
        atol=1e-5,
        rtol=1e-5,
    )


def test_empty_dims_refused():
    """torch's meta reduces no dim for dims=[], its eager kernel every dim: no exact answer."""
    with pytest.raises(Exception, match="dims=\\[\\]") as info:
        check_op(lambda t: P.sum(t, []), [torch.rand(2, 3)], expect_op="prims::sum.default")
    assert isinstance(info.value.__cause__, UnsupportedError)
