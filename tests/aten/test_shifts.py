"""Hypothesis tests of the bit shifts: every shift amount torch defines, signed and not."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from tonnx.testing import check_op

COVERS = {
    "aten::__lshift__.Tensor",
    "aten::__lshift__.Scalar",
    "aten::__rshift__.Tensor",
    "aten::__rshift__.Scalar",
    "aten::bitwise_left_shift.Tensor",
    "aten::bitwise_left_shift.Tensor_Scalar",
    "aten::bitwise_left_shift.Scalar_Tensor",
    "aten::bitwise_right_shift.Tensor",
    "aten::bitwise_right_shift.Tensor_Scalar",
    "aten::bitwise_right_shift.Scalar_Tensor",
}

DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
WIDTH = {torch.int8: 8, torch.int16: 16, torch.int32: 32, torch.int64: 64, torch.uint8: 8}


def _values(dtype, shape, seed):
    info = torch.iinfo(dtype)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(max(info.min, -(2**62)), min(info.max, 2**62), shape, dtype=torch.int64, generator=gen)
    x = x.to(dtype)
    x.view(-1)[0] = info.min
    x.view(-1)[-1] = info.max
    return x


@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.sampled_from([(6,), (2, 5)]),
    amount=st.integers(-2, 70),
    seed=st.integers(0, 100),
)
def test_shift_by_scalar(dtype, shape, amount, seed):
    x = _values(dtype, shape, seed)
    if dtype == torch.uint8:
        amount = abs(amount)
    for op, key in (
        (lambda a: a << amount, "aten::__lshift__.Scalar"),
        (lambda a: a >> amount, "aten::__rshift__.Scalar"),
        (lambda a: torch.bitwise_left_shift(a, amount), "aten::bitwise_left_shift.Tensor_Scalar"),
        (lambda a: torch.bitwise_right_shift(a, amount), "aten::bitwise_right_shift.Tensor_Scalar"),
    ):
        check_op(op, [x], expect_op=key)


@given(dtype=st.sampled_from(DTYPES), seed=st.integers(0, 100))
def test_shift_by_tensor(dtype, seed):
    x = _values(dtype, (3, 8), seed)
    width = WIDTH[dtype]
    low = 0 if dtype == torch.uint8 else -3
    b = torch.randint(low, width + 4, (8,), generator=torch.Generator().manual_seed(seed + 1)).to(dtype)
    b[:2] = torch.tensor([0, width - 1], dtype=dtype)
    check_op(lambda a, s: a << s, [x, b], expect_op="aten::__lshift__.Tensor")
    check_op(lambda a, s: a >> s, [x, b], expect_op="aten::__rshift__.Tensor")
    check_op(torch.bitwise_left_shift, [x, b], expect_op="aten::bitwise_left_shift.Tensor")
    check_op(torch.bitwise_right_shift, [x, b], expect_op="aten::bitwise_right_shift.Tensor")


@given(value=st.integers(-100, 100), seed=st.integers(0, 100))
def test_shift_scalar_by_tensor(value, seed):
    b = torch.randint(-2, 70, (7,), generator=torch.Generator().manual_seed(seed))
    check_op(lambda s: torch.bitwise_left_shift(value, s), [b], expect_op="aten::bitwise_left_shift.Scalar_Tensor")
    check_op(lambda s: torch.bitwise_right_shift(value, s), [b], expect_op="aten::bitwise_right_shift.Scalar_Tensor")


def test_promotion_between_integer_types():
    x = torch.tensor([-100, 7, 100], dtype=torch.int8)
    b = torch.tensor([1, 2, 3], dtype=torch.int32)
    check_op(lambda a, s: a << s, [x, b], expect_op="aten::__lshift__.Tensor")
