"""Hypothesis tests of the complex converters: torch eager against onnxruntime.

Most models take and return real tensors, complex values living in between, made by
``view_as_complex``/``polar``/``complex`` and read back with ``view_as_real``/``real``/
``imag``/``abs``/``angle``; others take and return complex tensors, which tonnx feeds and
returns as their real pairs [..., 2]. Each test runs the op on complex values, so the
converter registered with ``complex=True`` is exercised.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import (
    broadcast_shapes,
    check_model,
    check_op,
    make_tensor,
    seeds,
    shapes,
    with_specials,
)

COVERS = {
    "aten::polar.default (complex)",
    "aten::complex.default (complex)",
    "aten::view_as_complex.default (complex)",
    "aten::view_as_real.default (complex)",
    "aten::real.default (complex)",
    "aten::imag.default (complex)",
    "aten::mul.Tensor (complex)",
    "aten::mul.Scalar (complex)",
    "aten::abs.default (complex)",
    "aten::angle.default (complex)",
    "aten::_to_copy.default (complex)",
    "aten::to.dtype (complex)",
    "aten::to.dtype_layout (complex)",
    "aten::to.device (complex)",
    "aten::type_as.default (complex)",
    "aten::clone.default (complex)",
    "aten::view.default (complex)",
    "aten::_unsafe_view.default (complex)",
    "aten::reshape.default (complex)",
    "aten::flatten.using_ints (complex)",
    "aten::unsqueeze.default (complex)",
    "aten::transpose.int (complex)",
    "aten::permute.default (complex)",
    "aten::expand.default (complex)",
    "aten::slice.Tensor (complex)",
    "aten::cat.default (complex)",
    "aten::add.Tensor (complex)",
    "aten::add.Scalar (complex)",
    "aten::sub.Tensor (complex)",
    "aten::sub.Scalar (complex)",
    "aten::neg.default (complex)",
    "aten::div.Tensor (complex)",
    "aten::div.Scalar (complex)",
    "aten::exp.default (complex)",
    "aten::_conj.default (complex)",
    "aten::conj_physical.default (complex)",
    "aten::_conj_physical.default (complex)",
    "aten::resolve_conj.default (complex)",
    "aten::resolve_neg.default (complex)",
    "aten::alias.default (complex)",
    "aten::sum.default (complex)",
    "aten::sum.dim_IntList (complex)",
    "aten::mean.default (complex)",
    "aten::mean.dim (complex)",
    "aten::view_as.default (complex)",
    "aten::squeeze.default (complex)",
    "aten::squeeze.dim (complex)",
    "aten::squeeze.dims (complex)",
    "aten::select.int (complex)",
    "aten::narrow.default (complex)",
    "aten::split.Tensor (complex)",
    "aten::split_with_sizes.default (complex)",
    "aten::unbind.int (complex)",
    "aten::flip.default (complex)",
    "aten::roll.default (complex)",
    "aten::stack.default (complex)",
    "aten::where.self (complex)",
    "aten::constant_pad_nd.default (complex)",
    "aten::pad.default (complex)",
}

vc, vr = torch.view_as_complex, torch.view_as_real
F = torch.nn.functional
FLOATS = st.sampled_from([torch.float32, torch.float64])


def tol(dtype: torch.dtype) -> dict:
    return (
        {"atol": 1e-10, "rtol": 1e-10} if dtype == torch.float64 else {"atol": 1e-5, "rtol": 1e-5}
    )


def check_ops(cases, tensors, **kwargs):
    """One model with one output per ``(key, function)`` case: one export for all of them."""

    class Ops(torch.nn.Module):
        def forward(self, *xs):
            return tuple(fn(*xs) for _, fn in cases)

    return check_model(Ops(), tuple(tensors), expect_ops=[k for k, _ in cases], **kwargs)


def pairs(seed: int, shape, dtype, specials: bool = False) -> torch.Tensor:
    """A real tensor [..., 2]: the (real, imaginary) pairs of a complex one."""
    t = make_tensor(seed, (*shape, 2), dtype)
    return with_specials(t, seed) if specials else t


# -- making and unmaking complex values --------------------------------------------------------


@given(shapes=broadcast_shapes(), dtype=FLOATS, seed=seeds())
def test_polar(shapes, dtype, seed):
    a = make_tensor(seed, shapes[0], dtype, 0.0, 4.0)
    b = make_tensor(seed + 1, shapes[1], dtype)
    check_op(
        lambda a, b: vr(torch.polar(a, b)), [a, b], expect_op="aten::polar.default", **tol(dtype)
    )


@given(shapes=broadcast_shapes(), dtype=FLOATS, seed=seeds(), specials=st.booleans())
def test_complex(shapes, dtype, seed, specials):
    a = make_tensor(seed, shapes[0], dtype)
    b = make_tensor(seed + 1, shapes[1], dtype)
    if specials:
        a, b = with_specials(a, seed), with_specials(b, seed + 2)
    check_op(
        lambda a, b: vr(torch.complex(a, b)),
        [a, b],
        expect_op="aten::complex.default",
        **tol(dtype),
    )


@given(shapes=broadcast_shapes(), dtype=FLOATS, seed=seeds(), specials=st.booleans())
def test_mul_of_complex_tensors(shapes, dtype, seed, specials):
    """view_as_complex, complex mul and view_as_real, broadcasting, with nan/inf."""
    x, y = pairs(seed, shapes[0], dtype, specials), pairs(seed + 1, shapes[1], dtype, specials)
    check_op(
        lambda x, y: vr(vc(x) * vc(y)),
        [x, y],
        expect_op=[
            "aten::view_as_complex.default",
            "aten::mul.Tensor",
            "aten::view_as_real.default",
        ],
        **tol(dtype),
    )


@given(shapes=broadcast_shapes(), dtype=FLOATS, seed=seeds(), specials=st.booleans())
def test_mul_of_complex_and_real(shapes, dtype, seed, specials):
    """A real operand is promoted to complex: inf * (2 + 0i) has a nan imaginary part."""
    x = pairs(seed, shapes[0], dtype, specials)
    y = make_tensor(seed + 1, shapes[1], dtype)
    if specials:
        y = with_specials(y, seed + 2)
    cases = [
        ("aten::mul.Tensor", lambda x, y: vr(vc(x) * y)),
        ("aten::mul.Tensor", lambda x, y: vr(y * vc(x))),
    ]
    check_ops(cases, [x, y], **tol(dtype))


@given(
    shape=shapes(max_rank=3),
    dtype=FLOATS,
    seed=seeds(),
    scalar=st.sampled_from([2.5, -1.0, 0.0, 3, 1j, 0.5 - 2j]),
)
def test_mul_by_scalar(shape, dtype, seed, scalar):
    x = pairs(seed, shape, dtype, specials=True)
    cases = [
        ("aten::mul.Tensor", lambda x: vr(vc(x) * scalar)),
        ("aten::mul.Scalar", lambda x: vr(torch.ops.aten.mul.Scalar(vc(x), scalar))),
    ]
    check_ops(cases, [x], **tol(dtype))


@given(shape=shapes(max_rank=3), dtype=FLOATS, seed=seeds())
def test_real_tensor_times_complex_scalar(shape, dtype, seed):
    """A real tensor times 1j is a complex result from real inputs."""
    y = make_tensor(seed, shape, dtype)
    check_op(lambda y: vr(y * (0.5 + 1j)), [y], expect_op="aten::mul.Tensor", **tol(dtype))


@given(shape=shapes(max_rank=3), dtype=FLOATS, seed=seeds(), specials=st.booleans())
def test_real_imag_abs_angle(shape, dtype, seed, specials):
    x = pairs(seed, shape, dtype, specials)
    cases = [
        ("aten::real.default", lambda x: torch.real(vc(x))),
        ("aten::imag.default", lambda x: torch.imag(vc(x))),
        ("aten::abs.default", lambda x: torch.abs(vc(x))),
        ("aten::angle.default", lambda x: torch.angle(vc(x))),
    ]
    # onnxruntime has no double Atan: the reference evaluator runs complex128's angle
    runtime = "reference" if dtype == torch.float64 else "onnxruntime"
    check_ops(cases, [x], runtime=runtime, **tol(dtype))


def test_abs_and_angle_corner_cases():
    """Large moduli (no overflow), zeros of both signs, inf with nan (hypot gives inf)."""
    inf, nan = float("inf"), float("nan")
    values = [
        [3e30, 4e30], [3e300, 4e300], [1e-30, 1e-30], [0.0, -0.0], [-0.0, 0.0], [-0.0, -0.0],
        [inf, nan], [nan, -inf], [nan, 1.0], [-inf, inf], [-1.0, 0.0], [-1.0, -0.0],
    ]  # fmt: skip
    for dtype in (torch.float32, torch.float64):
        x = torch.tensor(values, dtype=dtype)
        if dtype == torch.float32:
            x = torch.cat([x[:1], x[2:]])  # 3e300 is inf in float32
        cases = [
            ("aten::abs.default", lambda x: torch.abs(vc(x))),
            ("aten::angle.default", lambda x: torch.angle(vc(x))),
        ]
        runtime = "reference" if dtype == torch.float64 else "onnxruntime"
        check_ops(cases, [x], runtime=runtime, **tol(dtype))


@given(shapes=broadcast_shapes(), dtype=FLOATS, seed=seeds(), data=st.data())
def test_add_sub_div(shapes, dtype, seed, data):
    """Complex with complex, real tensors and numbers (alpha too), broadcasting. Divisors
    are nonzero: torch's scalar and vectorized kernels disagree on a 0 divisor."""
    x, y = pairs(seed, shapes[0], dtype), pairs(seed + 1, shapes[1], dtype)
    r = make_tensor(seed + 2, shapes[1], dtype, 0.5, 4.0)
    number = data.draw(st.sampled_from([2, -1.5, 0.5j, 1 - 2j]))
    alpha = data.draw(st.sampled_from([1, 2, -0.5, 1j]))
    add, sub, div = torch.ops.aten.add, torch.ops.aten.sub, torch.ops.aten.div
    cases = [
        ("aten::add.Tensor", lambda x, y, r: vr(torch.add(vc(x), vc(y), alpha=alpha))),
        ("aten::add.Tensor", lambda x, y, r: vr(vc(x) + r)),
        ("aten::add.Tensor", lambda x, y, r: vr(r + number * vc(y))),
        ("aten::add.Scalar", lambda x, y, r: vr(add.Scalar(vc(x), number))),
        ("aten::sub.Tensor", lambda x, y, r: vr(torch.sub(vc(x), vc(y), alpha=alpha))),
        ("aten::sub.Tensor", lambda x, y, r: vr(r - vc(x))),
        ("aten::sub.Scalar", lambda x, y, r: vr(sub.Scalar(vc(y), number))),
        ("aten::neg.default", lambda x, y, r: vr(-vc(x))),
        ("aten::div.Tensor", lambda x, y, r: vr(vc(x) / (vc(y) + 5))),
        ("aten::div.Tensor", lambda x, y, r: vr(vc(x) / r)),
        ("aten::div.Tensor", lambda x, y, r: vr(r / (vc(x) + 5j))),
        ("aten::div.Tensor", lambda x, y, r: vr(vc(x) / number)),
        ("aten::div.Scalar", lambda x, y, r: vr(div.Scalar(vc(x), number))),
    ]
    check_ops(cases, [x, y, r], **tol(dtype))


@given(shape=shapes(max_rank=3), dtype=FLOATS, seed=seeds())
def test_exp_and_conjugates(shape, dtype, seed):
    x = pairs(seed, shape, dtype)
    aten = torch.ops.aten
    cases = [
        ("aten::exp.default", lambda x: vr(torch.exp(vc(x)))),
        ("aten::_conj.default", lambda x: vr(vc(x).conj().clone())),
        ("aten::conj_physical.default", lambda x: vr(torch.conj_physical(vc(x)))),
        ("aten::_conj_physical.default", lambda x: vr(aten._conj_physical(vc(x)))),
        ("aten::resolve_conj.default", lambda x: vr(aten.resolve_conj(aten._conj(vc(x))))),
        ("aten::resolve_neg.default", lambda x: vr(aten.resolve_neg(vc(x)))),
        ("aten::alias.default", lambda x: vr(aten.alias(vc(x)))),
    ]
    check_ops(cases, [x], **tol(dtype))


@given(shape=shapes(min_rank=1, max_rank=4), dtype=FLOATS, seed=seeds(), data=st.data())
def test_sum_mean(shape, dtype, seed, data):
    x = pairs(seed, shape, dtype)
    rank = len(shape)
    dims = data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank, unique_by=lambda d: d % rank))
    keep = data.draw(st.booleans())
    cases = [
        ("aten::sum.default", lambda x: vr(vc(x).sum())),
        ("aten::sum.dim_IntList", lambda x: vr(vc(x).sum(dims, keepdim=keep))),
        ("aten::sum.dim_IntList", lambda x: vr(vc(x).sum(dims, dtype=torch.complex128))),
        ("aten::mean.default", lambda x: vr(vc(x).mean())),
        ("aten::mean.dim", lambda x: vr(vc(x).mean(dims, keepdim=keep))),
    ]
    check_ops(cases, [x], **tol(dtype))


@given(shape=shapes(min_rank=1, max_rank=3), seed=seeds(), data=st.data())
def test_select_split_stack_and_friends(shape, seed, data):
    x = pairs(seed, shape, torch.float32)
    rank = len(shape)
    dim = data.draw(st.integers(-rank, rank - 1))
    size = shape[dim]
    index = data.draw(st.integers(-size, size - 1))
    start = data.draw(st.integers(0, size - 1))
    piece = data.draw(st.integers(1, size))
    shift = data.draw(st.integers(-5, 5))
    y = make_tensor(seed + 1, shape, torch.float32)
    cond = make_tensor(seed + 2, shape, torch.bool)
    sizes = [piece, size - piece] if piece < size else [size]
    mode = data.draw(st.sampled_from(["constant", "reflect", "replicate", "circular"]))
    pad_nd, numel = torch.ops.aten.constant_pad_nd, x.numel() // 2
    cases = [
        ("aten::select.int", lambda x, y, c: vr(vc(x).select(dim, index))),
        ("aten::narrow.default", lambda x, y, c: vr(vc(x).narrow(dim, start, size - start))),
        ("aten::split.Tensor", lambda x, y, c: tuple(vr(p) for p in vc(x).split(piece, dim))),
        ("aten::split_with_sizes.default", lambda x, y, c: tuple(vr(p) for p in vc(x).split(sizes, dim))),
        ("aten::unbind.int", lambda x, y, c: tuple(vr(p) for p in vc(x).unbind(dim))),
        ("aten::flip.default", lambda x, y, c: vr(vc(x).flip(dim))),
        ("aten::roll.default", lambda x, y, c: vr(vc(x).roll(shift, dim))),
        ("aten::roll.default", lambda x, y, c: vr(vc(x).roll(shift))),
        ("aten::stack.default", lambda x, y, c: vr(torch.stack([vc(x), y, vc(x)], dim))),
        ("aten::where.self", lambda x, y, c: vr(torch.where(c, vc(x), y))),
        ("aten::constant_pad_nd.default", lambda x, y, c: vr(pad_nd(vc(x), [1, 2, 0, 1][: 2 * rank]))),
        ("aten::pad.default", lambda x, y, c: vr(F.pad(vc(x).reshape(1, -1), [numel - 1, 0], mode))),
        ("aten::view_as.default", lambda x, y, c: vr(vc(x).view_as(y))),
        ("aten::squeeze.default", lambda x, y, c: vr(vc(x).unsqueeze(dim).squeeze())),
        ("aten::squeeze.dim", lambda x, y, c: vr(vc(x).unsqueeze(0).squeeze(0))),
        ("aten::squeeze.dims", lambda x, y, c: vr(vc(x).unsqueeze(-1).squeeze([-1, 0]))),
    ]
    check_ops(cases, [x, y, cond])  # nested tuples of outputs are flattened


# -- dtype conversions ------------------------------------------------------------------------


@given(shape=shapes(max_rank=3), seed=seeds())
def test_to_between_complex_and_real(shape, seed):
    x = pairs(seed, shape, torch.float32, specials=True)
    y = make_tensor(seed + 1, shape, torch.float64)
    to_copy, to_layout = torch.ops.aten._to_copy.default, torch.ops.aten.to.dtype_layout
    cases = [
        ("aten::to.dtype", lambda x, y: vr(vc(x).to(torch.complex128))),
        ("aten::to.dtype", lambda x, y: vr(y.to(torch.complex64))),
        ("aten::to.dtype", lambda x, y: vc(x).to(torch.bool)),
        ("aten::to.dtype", lambda x, y: vc(x).to(torch.float64)),  # the real part
        ("aten::to.device", lambda x, y: vr(vc(x).to(dtype=torch.complex128, device="cpu"))),
        ("aten::to.dtype_layout", lambda x, y: vr(to_layout(vc(x), dtype=torch.complex128))),
        ("aten::_to_copy.default", lambda x, y: vr(to_copy(vc(x), dtype=torch.complex128))),
        ("aten::type_as.default", lambda x, y: vr(y.type_as(vc(x)))),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that the imaginary part is discarded
        check_ops(cases, [x, y], **tol(torch.float32))


# -- shape ops ----------------------------------------------------------------------------------


@given(shape=shapes(min_rank=1, max_rank=4), seed=seeds(), data=st.data())
def test_reshapes(shape, seed, data):
    x = pairs(seed, shape, torch.float32)
    rank = len(shape)
    start = data.draw(st.integers(-rank, rank - 1))
    end = data.draw(st.integers(start % rank, rank - 1)) - data.draw(st.sampled_from([0, rank]))
    unsafe_view = torch.ops.aten._unsafe_view.default
    cases = [
        ("aten::reshape.default", lambda x: vr(vc(x).reshape(-1, shape[-1]))),
        ("aten::view.default", lambda x: vr(vc(x).view(-1))),
        ("aten::_unsafe_view.default", lambda x: vr(unsafe_view(vc(x), [shape[0], -1]))),
        ("aten::flatten.using_ints", lambda x: vr(vc(x).flatten(start, end))),
        ("aten::clone.default", lambda x: vr(vc(x).clone())),
    ]
    check_ops(cases, [x])


@given(shape=shapes(max_rank=4), seed=seeds(), data=st.data())
def test_unsqueeze_transpose_permute(shape, seed, data):
    x = pairs(seed, shape, torch.float32)
    rank = len(shape)
    dim = data.draw(st.integers(-rank - 1, rank))
    perm = data.draw(st.permutations(range(rank)))
    perm = [p - rank if data.draw(st.booleans()) else p for p in perm]
    cases = [
        ("aten::unsqueeze.default", lambda x: vr(vc(x).unsqueeze(dim))),
        ("aten::permute.default", lambda x: vr(vc(x).permute(perm))),
    ]
    if rank >= 2:
        d0, d1 = data.draw(st.integers(-rank, rank - 1)), data.draw(st.integers(-rank, rank - 1))
        cases.append(("aten::transpose.int", lambda x: vr(vc(x).transpose(d0, d1))))
    check_ops(cases, [x])


@given(shape=shapes(min_rank=1, max_rank=3, max_side=3), seed=seeds(), data=st.data())
def test_expand_slice_cat(shape, seed, data):
    x = pairs(seed, shape, torch.float32)
    rank = len(shape)
    size = [
        data.draw(st.sampled_from([-1, 3])) if d == 1 else data.draw(st.sampled_from([-1, d]))
        for d in shape
    ]
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2))
    dim = data.draw(st.integers(-rank, rank - 1))
    start, step = data.draw(st.integers(-3, 3)), data.draw(st.integers(1, 2))
    y = make_tensor(seed + 1, shape, torch.float64)  # real: promoted to complex by cat
    empty = torch.zeros(0)  # 1-D empty tensors are skipped, as torch does
    slice_ = torch.ops.aten.slice.Tensor
    cases = [
        ("aten::expand.default", lambda x, y, e: vr(vc(x).expand(*lead, *size))),
        ("aten::slice.Tensor", lambda x, y, e: vr(slice_(vc(x), dim, start, None, step))),
        ("aten::cat.default", lambda x, y, e: vr(torch.cat([vc(x), e, y, vc(x)], dim))),
    ]
    check_ops(cases, [x, y, empty])


def test_dynamic_shapes_through_complex_values():
    """sym_size of a complex tensor counts torch's axes, not the pair axis."""

    class Rotate(torch.nn.Module):
        def forward(self, x, angle):
            z = vc(x) * torch.polar(torch.ones_like(angle), angle)
            return vr(z.reshape(z.shape[0], z.shape[-1] * z.shape[-2]))

    x, angle = torch.randn(3, 5, 4, 2), torch.randn(5, 4)
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    check_model(
        Rotate(),
        (x, angle),
        dynamic_shapes=({0: batch, 1: seq}, {0: seq}),
        other_inputs=[(torch.randn(2, 7, 4, 2), torch.randn(7, 4))],
        atol=1e-5,
        rtol=1e-5,
    )


# -- what tonnx refuses -------------------------------------------------------------------------


def _export(fn, *tensors):
    from tonnx.testing import op_module

    return tonnx.to_onnx(op_module(fn, len(tensors)), tuple(tensors))


def test_op_without_complex_converter_is_refused():
    """sin has a real converter only: on a complex value it is refused by name, never run."""
    x = torch.randn(3, 2)
    with pytest.raises(
        tonnx.UnsupportedError, match=r"complex input not supported by aten::sin\.default"
    ):
        _export(lambda x: vr(torch.sin(vc(x))), x)
    # a complex result made from real inputs by an op without complex converter
    with pytest.raises(tonnx.UnsupportedError, match=r"complex result not supported by aten::full"):
        _export(lambda x: vr(torch.full((2,), 1j) * x[:2, 0]), x)


@given(shape=shapes(max_rank=3), dtype=st.sampled_from([torch.complex64, torch.complex128]), seed=seeds())
def test_complex_model_inputs_and_outputs_are_pairs(shape, dtype, seed):
    """A complex input is fed as torch.view_as_real(z), a complex output returned so: the
    graph's are float [..., 2] under the same names, listed in the model's metadata."""
    part = torch.float32 if dtype == torch.complex64 else torch.float64
    z = torch.complex(make_tensor(seed, shape, part), make_tensor(seed + 1, shape, part))
    x = make_tensor(seed + 2, shape, part)

    class Both(torch.nn.Module):
        def forward(self, z, x):
            return z * x, (z * z.conj()).real, x + 1.0

    onx = check_model(Both(), (z, x), input_names=["z", "x"], output_names=["zx", "norm2"], **tol(part))
    inputs = {i.name: i.type.tensor_type for i in onx.graph.input}
    assert [d.dim_value for d in inputs["z"].shape.dim] == [*shape, 2]
    assert inputs["z"].elem_type == inputs["x"].elem_type  # float32 for complex64
    meta = {p.key: p.value for p in onx.metadata_props}
    assert meta["pkg.tonnx.complex_inputs"] == "z"
    assert meta["pkg.tonnx.complex_outputs"] == "zx"


def test_complex32_model_input_is_refused():
    z = torch.randn(3, dtype=torch.complex32)
    with pytest.raises(tonnx.UnsupportedError, match="complex32"):
        _export(lambda z: z.real.float(), z)


def test_complex_parameter_is_stored_as_pairs():
    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4, dtype=torch.complex64))

        def forward(self, x):
            return vr(vc(x) * self.w)

    check_model(Scale(), (torch.randn(3, 4, 2),), atol=1e-5, rtol=1e-5)
