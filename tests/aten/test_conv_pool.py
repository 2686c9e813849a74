"""Hypothesis tests of convolution, pooling, upsampling and grid sampling converters."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model, check_op

COVERS = {
    "aten::convolution.default",
    "aten::_convolution.default",
    "aten::conv1d.default",
    "aten::conv2d.default",
    "aten::conv3d.default",
    "aten::conv1d.padding",
    "aten::conv2d.padding",
    "aten::conv3d.padding",
    "aten::conv_transpose1d.default",
    "aten::conv_transpose2d.input",
    "aten::conv_transpose3d.input",
    "aten::max_pool1d.default",
    "aten::max_pool2d.default",
    "aten::max_pool3d.default",
    "aten::max_pool1d_with_indices.default",
    "aten::max_pool2d_with_indices.default",
    "aten::max_pool3d_with_indices.default",
    "aten::avg_pool1d.default",
    "aten::avg_pool2d.default",
    "aten::avg_pool3d.default",
    "aten::adaptive_avg_pool1d.default",
    "aten::adaptive_avg_pool2d.default",
    "aten::adaptive_avg_pool3d.default",
    "aten::_adaptive_avg_pool2d.default",
    "aten::_adaptive_avg_pool3d.default",
    "aten::adaptive_max_pool1d.default",
    "aten::adaptive_max_pool2d.default",
    "aten::adaptive_max_pool3d.default",
    "aten::upsample_nearest1d.vec",
    "aten::upsample_nearest2d.vec",
    "aten::upsample_nearest3d.vec",
    "aten::_upsample_nearest_exact1d.vec",
    "aten::_upsample_nearest_exact2d.vec",
    "aten::_upsample_nearest_exact3d.vec",
    "aten::upsample_nearest1d.default",
    "aten::upsample_nearest2d.default",
    "aten::upsample_nearest3d.default",
    "aten::_upsample_nearest_exact1d.default",
    "aten::_upsample_nearest_exact2d.default",
    "aten::_upsample_nearest_exact3d.default",
    "aten::upsample_linear1d.vec",
    "aten::upsample_bilinear2d.vec",
    "aten::upsample_trilinear3d.vec",
    "aten::upsample_bicubic2d.vec",
    "aten::upsample_linear1d.default",
    "aten::upsample_bilinear2d.default",
    "aten::upsample_trilinear3d.default",
    "aten::upsample_bicubic2d.default",
    "aten::_upsample_bilinear2d_aa.vec",
    "aten::_upsample_bilinear2d_aa.default",
    "aten::_upsample_bicubic2d_aa.vec",
    "aten::_upsample_bicubic2d_aa.default",
    "aten::grid_sampler.default",
    "aten::grid_sampler_2d.default",
    "aten::grid_sampler_3d.default",
}

seeds = st.integers(0, 2**16)
small = st.integers(1, 3)
CONV_KEYS = {1: "aten::conv1d", 2: "aten::conv2d", 3: "aten::conv3d"}


def make(seed: int, shape, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=gen) * 2 - 1).to(dtype)
    if dtype == torch.uint8:
        return torch.randint(0, 255, shape, generator=gen).to(dtype)
    return torch.randint(-100, 100, shape, generator=gen).to(dtype)


def distinct(seed: int, shape, dtype: torch.dtype) -> torch.Tensor:
    """A permutation of integers: no ties (up to float16's and uint8's ranges)."""
    gen = torch.Generator().manual_seed(seed)
    values = torch.randperm(math.prod(shape), generator=gen).reshape(shape)
    if dtype == torch.float16:
        values = values % 2048  # integers stay exact in float16
    elif dtype == torch.uint8:
        values = values % 256
    return values.to(dtype)


def tol(dtype: torch.dtype) -> dict:
    if dtype == torch.float16:
        return {"atol": 1e-2, "rtol": 1e-2}
    return {"atol": 1e-4, "rtol": 1e-4}


def runtime(dtype: torch.dtype) -> dict:
    # onnxruntime's CPU Conv, ConvTranspose, AveragePool, Resize lack float64 kernels
    return {"runtime": "reference"} if dtype == torch.float64 else {}


# -- convolutions -------------------------------------------------------------------------------


@st.composite
def conv_cases(draw, n: int, transposed: bool = False):
    dtype = draw(st.sampled_from([torch.float32, torch.float16, torch.float64]))
    # float64 runs in onnx's reference evaluator, whose grouped ConvTranspose is broken
    groups = 1 if dtype == torch.float64 else draw(small)
    case = {
        "n": n,
        "groups": groups,
        "cin": groups * draw(small),
        "cout": groups * draw(small),
        "kernel": [draw(st.integers(1, 3)) for _ in range(n)],
        "stride": [draw(st.integers(1, 3)) for _ in range(n)],
        "dilation": [draw(st.integers(1, 2)) for _ in range(n)],
        "bias": draw(st.booleans()),
        "batch": draw(st.sampled_from([None, 1, 2])),
        "dtype": dtype,
        "seed": draw(seeds),
    }
    case["padding"] = [draw(st.integers(0, k // 2 + 1)) for k in case["kernel"]]
    reach = [d * (k - 1) + 1 for d, k in zip(case["dilation"], case["kernel"])]
    case["size"] = [r + draw(st.integers(0, 4)) for r in reach]
    if transposed:
        case["output_padding"] = [
            draw(st.integers(0, max(s, d) - 1)) for s, d in zip(case["stride"], case["dilation"])
        ]
    return case


def _conv_tensors(case, transposed: bool = False):
    cin, cout, groups = case["cin"], case["cout"], case["groups"]
    batch = () if case["batch"] is None else (case["batch"],)
    x = make(case["seed"], (*batch, cin, *case["size"]), case["dtype"])
    w_shape = (cin, cout // groups) if transposed else (cout, cin // groups)
    w = make(case["seed"] + 1, (*w_shape, *case["kernel"]), case["dtype"])
    b = make(case["seed"] + 2, (cout,), case["dtype"]) if case["bias"] else None
    return x, w, b


@pytest.mark.parametrize("n", [1, 2, 3])
@given(data=st.data())
def test_conv(n, data):
    case = data.draw(conv_cases(n))
    x, w, b = _conv_tensors(case)
    conv = getattr(F, f"conv{n}d")
    kwargs = {k: case[k] for k in ("stride", "padding", "dilation", "groups")}
    tensors = [x, w] if b is None else [x, w, b]
    fn = (lambda x, w: conv(x, w, None, **kwargs)) if b is None else (lambda x, w, b: conv(x, w, b, **kwargs))
    dtype = case["dtype"]
    check_op(fn, tensors, expect_op=f"{CONV_KEYS[n]}.default", **tol(dtype), **runtime(dtype))


@pytest.mark.parametrize("n", [1, 2, 3])
@given(data=st.data(), padding=st.sampled_from(["same", "valid"]))
def test_conv_padding_string(n, data, padding):
    case = data.draw(conv_cases(n))
    x, w, b = _conv_tensors(case)
    conv = getattr(F, f"conv{n}d")
    stride = 1 if padding == "same" else case["stride"]  # torch: "same" needs stride 1
    kwargs = {"stride": stride, "padding": padding, "dilation": case["dilation"], "groups": case["groups"]}
    dtype = case["dtype"]
    check_op(
        lambda x, w, b: conv(x, w, b, **kwargs),
        [x, w, b if b is not None else torch.zeros(case["cout"], dtype=dtype)],
        expect_op=f"{CONV_KEYS[n]}.padding",
        **tol(dtype),
        **runtime(dtype),
    )


@pytest.mark.parametrize("n", [1, 2, 3])
@given(data=st.data())
def test_conv_transpose(n, data):
    case = data.draw(conv_cases(n, transposed=True))
    x, w, b = _conv_tensors(case, transposed=True)
    conv = getattr(F, f"conv_transpose{n}d")
    kwargs = {k: case[k] for k in ("stride", "padding", "output_padding", "groups", "dilation")}
    # torch: padding at most dilation * (kernel - 1) for transposed convolutions
    kwargs["padding"] = [min(p, d * (k - 1)) for p, d, k in zip(case["padding"], case["dilation"], case["kernel"])]
    key = "aten::conv_transpose1d.default" if n == 1 else f"aten::conv_transpose{n}d.input"
    dtype = case["dtype"]
    check_op(
        lambda x, w, b: conv(x, w, b, **kwargs),
        [x, w, b if b is not None else torch.zeros(case["cout"], dtype=dtype)],
        expect_op=key,
        **tol(dtype),
        **runtime(dtype),
    )


@pytest.mark.parametrize("op", ["convolution", "_convolution"])
@given(data=st.data(), n=st.integers(1, 3), transposed=st.booleans())
def test_convolution(op, data, n, transposed):
    case = data.draw(conv_cases(n, transposed=transposed))
    if case["batch"] is None:
        case["batch"] = 1  # convolution.default needs a batch dimension
    x, w, b = _conv_tensors(case, transposed=transposed)
    padding = case["padding"]
    if transposed:
        padding = [min(p, d * (k - 1)) for p, d, k in zip(padding, case["dilation"], case["kernel"])]
    args = [case["stride"], padding, case["dilation"], transposed]
    args += [case.get("output_padding", [0] * n), case["groups"]]
    if op == "_convolution":
        args += [False, False, True, True]
    target = getattr(torch.ops.aten, op).default
    dtype = case["dtype"]
    check_op(
        lambda x, w: target(x, w, b, *args),
        [x, w],
        expect_op=f"aten::{op}.default",
        **tol(dtype),
        **runtime(dtype),
    )


# -- pooling ------------------------------------------------------------------------------------


@st.composite
def pool_cases(draw, n: int, dilation: bool = True):
    kernel = [draw(st.integers(1, 3)) for _ in range(n)]
    case = {
        "kernel": kernel,
        "stride": draw(st.sampled_from([[], *[[s] * n for s in (1, 2, 3)]])),
        "padding": [draw(st.integers(0, k // 2)) for k in kernel],
        "dilation": [draw(st.integers(1, 2)) if dilation else 1 for _ in range(n)],
        "ceil_mode": draw(st.booleans()),
        "batch": draw(st.sampled_from([None, 1, 2])),
        "channels": draw(small),
        "seed": draw(seeds),
    }
    reach = [d * (k - 1) + 1 for d, k in zip(case["dilation"], kernel)]
    case["size"] = [r + draw(st.integers(0, 4)) for r in reach]
    return case


def _pool_input(case, dtype, maker=make):
    batch = () if case["batch"] is None else (case["batch"],)
    return maker(case["seed"], (*batch, case["channels"], *case["size"]), dtype)


POOL_DTYPES = [torch.float32, torch.float16, torch.float64, torch.int32, torch.uint8]


@pytest.mark.parametrize("n", [1, 2, 3])
@given(data=st.data(), dtype=st.sampled_from(POOL_DTYPES), indices=st.booleans())
def test_max_pool(n, data, dtype, indices):
    if n == 1 and not dtype.is_floating_point and not indices:
        dtype = torch.float32  # torch has no integer max_pool1d (max_pool1d_with_indices has)
    case = data.draw(pool_cases(n))
    pool = getattr(F, f"max_pool{n}d")
    kwargs = {k: case[k] for k in ("stride", "padding", "dilation", "ceil_mode")}
    key = f"aten::max_pool{n}d_with_indices.default" if indices else f"aten::max_pool{n}d.default"
    check_op(
        lambda x: pool(x, case["kernel"], return_indices=indices, **kwargs),
        [_pool_input(case, dtype, distinct)],
        expect_op=key,
    )


def test_max_pool_inception_style():
    """MaxPool2d(3, 2, ceil_mode=True) of GoogLeNet/Inception on odd and even sizes."""
    for size in (7, 8, 15):
        x = distinct(size, (2, 3, size, size), torch.float32)
        check_op(
            lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True),
            [x],
            expect_op="aten::max_pool2d.default",
        )


@pytest.mark.parametrize("n", [1, 2, 3])
@given(data=st.data(), dtype=st.sampled_from([torch.float32, torch.float16, torch.float64]))
def test_avg_pool(n, data, dtype):
    if n == 3 and dtype == torch.float16:
        dtype = torch.float32  # torch has no float16 avg_pool3d on CPU
    case = data.draw(pool_cases(n, dilation=False))
    if dtype == torch.float64:
        # onnx's reference evaluator divides windows overhanging in ceil_mode differently
        # from onnxruntime and torch (onnxruntime, used for the other types, agrees)
        case["ceil_mode"] = False
    pool = getattr(F, f"avg_pool{n}d")
    kwargs = {k: case[k] for k in ("stride", "padding", "ceil_mode")}
    kwargs["count_include_pad"] = data.draw(st.booleans())
    if n > 1:
        kwargs["divisor_override"] = data.draw(st.sampled_from([None, None, 1, 3]))
    fn = lambda x: pool(x, case["kernel"], **kwargs)  # noqa: E731
    x = _pool_input(case, dtype)
    key = f"aten::avg_pool{n}d.default"
    if kwargs.get("divisor_override") is not None and _overhangs(case, fn(x).shape[-n:]):
        with pytest.raises(tonnx.UnsupportedError, match="divisor_override"):
            check_op(fn, [x], expect_op=key)
        return
    check_op(fn, [x], expect_op=key, **tol(dtype), **runtime(dtype))


def _overhangs(case, out) -> bool:
    stride = case["stride"] or case["kernel"]
    return any(
        (o - 1) * s + k > size + 2 * p
        for o, s, k, size, p in zip(out, stride, case["kernel"], case["size"], case["padding"])
    )


def test_avg_pool_inception_style():
    """AvgPool2d(3, 1, 1) (count_include_pad) of Inception and AvgPool2d(2, 2) of DenseNet."""
    x = make(0, (2, 4, 9, 9))
    check_op(lambda x: F.avg_pool2d(x, 3, 1, 1), [x], expect_op="aten::avg_pool2d.default")
    check_op(lambda x: F.avg_pool2d(x, 2, 2), [x], expect_op="aten::avg_pool2d.default")


@st.composite
def adaptive_cases(draw, n: int):
    return {
        "size": [draw(st.integers(1, 9)) for _ in range(n)],
        "out": [draw(st.integers(1, 6)) for _ in range(n)],
        "batch": draw(st.sampled_from([None, 1, 2])),
        "channels": draw(small),
        "seed": draw(seeds),
    }


@pytest.mark.parametrize("n,private", [(1, False), (2, False), (3, False), (2, True), (3, True)])
@given(data=st.data(), dtype=st.sampled_from([torch.float32, torch.float16, torch.float64]))
def test_adaptive_avg_pool(n, private, data, dtype):
    case = data.draw(adaptive_cases(n))
    if data.draw(st.booleans()):
        case["out"] = [1] * n  # global average pooling
    x = _pool_input(case, dtype)
    if private:
        op = getattr(torch.ops.aten, f"_adaptive_avg_pool{n}d").default
        key = f"aten::_adaptive_avg_pool{n}d.default"
        if case["batch"] is None:
            x = x[None]  # the private op has no unbatched form in torch's meta function
    else:
        op = getattr(F, f"adaptive_avg_pool{n}d")
        key = f"aten::adaptive_avg_pool{n}d.default"
    check_op(lambda x: op(x, case["out"]), [x], expect_op=key, **tol(dtype), **runtime(dtype))


@pytest.mark.parametrize("n", [1, 2, 3])
@given(data=st.data(), dtype=st.sampled_from([torch.float32, torch.float16, torch.float64]))
def test_adaptive_max_pool(n, data, dtype):
    case = data.draw(adaptive_cases(n))
    divisible = data.draw(st.booleans())
    if divisible:
        case["size"] = [o * data.draw(small) for o in case["out"]]
    even = all(s % o == 0 for s, o in zip(case["size"], case["out"]))
    pool = getattr(F, f"adaptive_max_pool{n}d")
    x = _pool_input(case, dtype, distinct)
    key = f"aten::adaptive_max_pool{n}d.default"
    check_op(lambda x: pool(x, case["out"], return_indices=even), [x], expect_op=key)
    if not even:
        with pytest.raises(tonnx.UnsupportedError, match="indices"):
            check_op(lambda x: pool(x, case["out"], return_indices=True), [x], expect_op=key)


def test_adaptive_pools_of_vision_models():
    """AdaptiveAvgPool2d((6, 6)) on AlexNet's 6x6 and 13x13 maps, (7, 7) of VGG, (1, 1)."""
    for size, out in ((6, 6), (13, 6), (14, 7), (7, 7), (5, 1)):
        x = make(size, (1, 4, size, size))
        check_op(
            lambda x: F.adaptive_avg_pool2d(x, out),  # noqa: B023
            [x],
            expect_op="aten::adaptive_avg_pool2d.default",
        )


# -- dynamic shapes -----------------------------------------------------------------------------


class Unary(torch.nn.Module):
    """``fn(x)`` as a module with one named input (check_op's ``*tensors`` forward does not
    take per-tensor dynamic_shapes)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def test_dynamic_shapes():
    """Batch and spatial sizes unknown at export: conv, pools with indices, global pools."""
    x = make(0, (2, 3, 8, 10))
    w = make(1, (4, 3, 3, 3))
    other = [(make(2, (3, 3, 12, 6)),)]

    def model(x):
        y = F.conv2d(x, w, padding=1)
        values, indices = F.max_pool2d(y, 2, return_indices=True)
        pooled = F.adaptive_avg_pool2d(y, 1)
        return values, indices, pooled, F.avg_pool2d(y, 3, 1, 1)

    dims = {0: torch.export.Dim("batch"), 2: torch.export.Dim("h", min=4), 3: torch.export.Dim("w", min=4)}
    check_model(
        Unary(model),
        (x,),
        dynamic_shapes=(dims,),
        other_inputs=other,
        expect_ops=["aten::conv2d.default", "aten::max_pool2d_with_indices.default"],
    )


# -- upsampling ---------------------------------------------------------------------------------

SCALES = [2.0, 3.0, 0.5, 1.5, 1.7, 2.5, 0.7, 1 / 3]


@st.composite
def upsample_cases(draw, n: int):
    size = [draw(st.integers(1, 7)) for _ in range(n)]
    case = {"size": size, "seed": draw(seeds), "channels": draw(small)}
    if draw(st.booleans()):
        case["scale"] = [draw(st.sampled_from(SCALES)) for _ in range(n)]
        case["scale"] = [f if math.floor(s * f) > 0 else 2.0 for s, f in zip(size, case["scale"])]
        case["out"] = None
    else:
        case["scale"] = None
        case["out"] = [draw(st.integers(1, 11)) for _ in range(n)]
    return case


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@given(data=st.data(), dtype=st.sampled_from([torch.float32, torch.float16, torch.uint8]))
def test_upsample_nearest(n, mode, data, dtype):
    case = data.draw(upsample_cases(n))
    x = make(case["seed"], (2, case["channels"], *case["size"]), dtype)
    prefix = "_upsample_nearest_exact" if mode == "nearest-exact" else "upsample_nearest"
    check_op(
        lambda x: F.interpolate(x, size=case["out"], scale_factor=case["scale"], mode=mode),
        [x],
        expect_op=f"aten::{prefix}{n}d.vec",
    )


@given(
    size=st.tuples(st.integers(1, 6), st.integers(1, 6)),
    factors=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    by_size=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.uint8]),
    seed=st.integers(0, 2**16),
)
def test_upsample_nearest2d_integer_factors_are_resize_scales(size, factors, by_size, dtype, seed):
    """Integer factors go to Resize as scales (onnxruntime's NCHWc Upsample then runs it
    between convolutions), with torch's indices."""
    out = [s * f for s, f in zip(size, factors)]
    x = make(seed, (2, 3, *size), dtype)
    kwargs = {"size": out} if by_size else {"scale_factor": [float(f) for f in factors]}
    onx = check_op(lambda x: F.interpolate(x, mode="nearest", **kwargs), [x], atol=0, rtol=0)
    (resize,) = [n for n in onx.graph.node if n.op_type == "Resize"]
    assert len(resize.input) == 3 and resize.input[2], list(resize.input)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("prefix", ["upsample_nearest", "_upsample_nearest_exact"])
@given(data=st.data())
def test_upsample_nearest_default(n, prefix, data):
    """The overloads with both an output size and (optional) scales, per axis."""
    case = data.draw(upsample_cases(n))
    out = case["out"] or [max(1, math.floor(s * f)) for s, f in zip(case["size"], case["scale"])]
    scales = [data.draw(st.sampled_from([None, *SCALES])) for _ in range(n)]
    op = getattr(torch.ops.aten, f"{prefix}{n}d").default
    x = make(case["seed"], (2, case["channels"], *case["size"]))
    check_op(lambda x: op(x, out, *scales), [x], expect_op=f"aten::{prefix}{n}d.default")


def test_upsample_nearest_dynamic():
    """Nearest upsampling with symbolic spatial sizes: indices are computed in the graph."""
    x = make(0, (1, 2, 5, 7))
    dims = {2: torch.export.Dim("h", min=2), 3: torch.export.Dim("w", min=2)}
    cases = [
        ("nearest", (1.5, 2.5), "upsample_nearest2d.vec"),
        ("nearest-exact", (1.5, 2.5), "_upsample_nearest_exact2d.vec"),
        ("nearest", (2.2, 1.1), "upsample_nearest2d.vec"),  # torch's shortcuts on 2-D
    ]
    for mode, scale, key in cases:
        check_model(
            Unary(lambda x: F.interpolate(x, scale_factor=scale, mode=mode)),  # noqa: B023
            (x,),
            dynamic_shapes=(dims,),
            other_inputs=[(make(1, (1, 2, 9, 3)),), (make(2, (1, 2, 5, 10)),)],
            expect_ops=[f"aten::{key}"],
        )


LINEAR_KEYS = {1: "upsample_linear1d", 2: "upsample_bilinear2d", 3: "upsample_trilinear3d"}
LINEAR_MODES = {1: "linear", 2: "bilinear", 3: "trilinear"}


@pytest.mark.parametrize("n,mode", [(1, "linear"), (2, "bilinear"), (3, "trilinear"), (2, "bicubic")])
@given(data=st.data(), align_corners=st.booleans(), dtype=st.sampled_from([torch.float32, torch.float16]))
def test_upsample_interpolate(n, mode, data, align_corners, dtype):
    case = data.draw(upsample_cases(n))
    x = make(case["seed"], (2, case["channels"], *case["size"]), dtype)
    key = "upsample_bicubic2d" if mode == "bicubic" else LINEAR_KEYS[n]
    check_op(
        lambda x: F.interpolate(
            x, size=case["out"], scale_factor=case["scale"], mode=mode, align_corners=align_corners
        ),
        [x],
        expect_op=f"aten::{key}.vec",
        **tol(dtype),
    )


@pytest.mark.parametrize("key", ["upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d"])
@given(data=st.data(), align_corners=st.booleans())
def test_upsample_interpolate_default(key, data, align_corners):
    n = int(key[-2])
    case = data.draw(upsample_cases(n))
    if case["scale"] is None or align_corners:
        out, scales = case["out"] or [3] * n, [None] * n
    else:
        scales = case["scale"]
        out = [math.floor(s * f) for s, f in zip(case["size"], scales)]
    op = getattr(torch.ops.aten, key).default
    x = make(case["seed"], (2, case["channels"], *case["size"]))
    check_op(lambda x: op(x, out, align_corners, *scales), [x], expect_op=f"aten::{key}.default")


AA_KEYS = {"bilinear": "_upsample_bilinear2d_aa", "bicubic": "_upsample_bicubic2d_aa"}
aa_modes = pytest.mark.parametrize("mode", ["bilinear", "bicubic"])


def _antialias_quirk(case, mode: str) -> bool:
    """To a width of 1 from a height > 1, torch's antialiased kernel repeats the first row:
    refused (checked here), never converted."""
    out = case["out"] or [math.floor(s * f) for s, f in zip(case["size"], case["scale"])]
    if out[1] != 1 or out[0] == 1 or case["size"][0] == 1:
        return False
    x = make(case["seed"], (1, 1, *case["size"]))
    for align_corners in (False, True):
        resize = Unary(lambda x: F.interpolate(x, size=out, mode=mode, antialias=True, align_corners=align_corners))  # noqa: B023
        with pytest.raises(tonnx.UnsupportedError, match="width of 1"):
            tonnx.to_onnx(resize, (x,))
    return True


@aa_modes
@given(data=st.data(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_upsample_antialiased(mode, data, dtype):
    """Resize(antialias=1, exclude_outside=1): torch's triangle or Keys cubic (a = -0.5) filter
    renormalized at borders."""
    case = data.draw(upsample_cases(2))
    x = make(case["seed"], (2, case["channels"], *case["size"]), dtype)
    if _antialias_quirk(case, mode):
        return
    check_op(
        lambda x: F.interpolate(x, size=case["out"], scale_factor=case["scale"], mode=mode, antialias=True),
        [x],
        expect_op=f"aten::{AA_KEYS[mode]}.vec",
        **tol(dtype),
        **runtime(dtype),
    )


@aa_modes
@given(data=st.data())
def test_upsample_antialiased_default(mode, data):
    case = data.draw(upsample_cases(2))
    if _antialias_quirk(case, mode):
        return
    if case["scale"] is None:
        out, scales = case["out"], [None, None]
    else:
        scales = case["scale"]
        out = [math.floor(s * f) for s, f in zip(case["size"], scales)]
    x = make(case["seed"], (2, case["channels"], *case["size"]))
    op = getattr(torch.ops.aten, AA_KEYS[mode]).default
    check_op(lambda x: op(x, out, False, *scales), [x], expect_op=f"aten::{AA_KEYS[mode]}.default")


@pytest.mark.parametrize("mode,antialias", [("bilinear", False), ("bilinear", True), ("bicubic", True)])
def test_upsample_scale_rounding_below_the_size(mode, antialias):
    """20 * 0.9f is 18 in float32 but 17.99999 exactly: the Resize scale must give 18 both ways."""
    key = AA_KEYS[mode] if antialias else "upsample_bilinear2d"
    check_op(
        lambda x: F.interpolate(x, scale_factor=(1.7, 0.9), mode=mode, antialias=antialias),
        [make(0, (1, 3, 10, 20))],
        expect_op=f"aten::{key}.vec",
    )


@aa_modes
@given(data=st.data(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_upsample_antialiased_align_corners(mode, data, dtype):
    """torch's antialiased align_corners mapping has no Resize mode: weights as two MatMuls."""
    case = data.draw(upsample_cases(2))
    x = make(case["seed"], (2, case["channels"], *case["size"]), dtype)
    if _antialias_quirk(case, mode):
        return
    check_op(
        lambda x: F.interpolate(
            x, size=case["out"], scale_factor=case["scale"], mode=mode, antialias=True, align_corners=True
        ),
        [x],
        expect_op=f"aten::{AA_KEYS[mode]}.vec",
        **tol(dtype),
    )


@aa_modes
def test_upsample_antialiased_align_corners_on_dynamic_sizes_is_refused(mode):
    dims = {2: torch.export.Dim("h", min=4), 3: torch.export.Dim("w", min=4)}  # out > 1: no guard
    with pytest.raises(tonnx.UnsupportedError, match="dynamic sizes"):
        tonnx.to_onnx(
            Unary(lambda x: F.interpolate(x, scale_factor=0.5, mode=mode, antialias=True, align_corners=True)),
            (make(0, (1, 2, 6, 8)),),
            dynamic_shapes=(dims,),
        )


@aa_modes
def test_upsample_antialiased_dynamic(mode):
    """Resize follows symbolic input sizes to a given output size, down- or upsampling."""
    dims = {2: torch.export.Dim("h", min=4), 3: torch.export.Dim("w", min=4)}
    others = [(make(1, (1, 2, 9, 5)),), (make(2, (1, 2, 16, 12)),)]
    for size in ((3, 5), (13, 7)):
        check_model(
            Unary(lambda x: F.interpolate(x, size=size, mode=mode, antialias=True)),  # noqa: B023
            (make(0, (1, 2, 6, 8)),),
            dynamic_shapes=(dims,),
            other_inputs=others,
            expect_ops=[f"aten::{AA_KEYS[mode]}.vec"],
        )


@aa_modes
@given(seed=seeds, scales=st.sampled_from([(1.7, 0.9), (0.3, 0.2), (0.7, 1.3)]))
def test_upsample_antialiased_scales_not_giving_the_size(mode, seed, scales):
    """torch maps coordinates by the scales and writes ``output_size``: its weights, MatMuls."""
    op = getattr(torch.ops.aten, AA_KEYS[mode]).default
    check_op(lambda x: op(x, [3, 3], False, *scales), [make(seed, (1, 2, 10, 20))], expect_op=f"aten::{AA_KEYS[mode]}.default")


# -- grid sampling ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3])
@given(
    data=st.data(),
    align_corners=st.booleans(),
    padding_mode=st.sampled_from(["zeros", "border", "reflection"]),
    opset=st.sampled_from([18, 20, 22]),
)
def test_grid_sample(n, data, align_corners, padding_mode, opset):
    modes = ["bilinear", "nearest", "bicubic"] if n == 2 else ["bilinear", "nearest"]
    mode = data.draw(st.sampled_from(modes))
    opset = opset if n == 2 else max(opset, 20)
    seed = data.draw(seeds)
    size = [data.draw(st.integers(1, 5)) for _ in range(n)]
    out = [data.draw(st.integers(1, 4)) for _ in range(n)]
    x = make(seed, (2, 3, *size))
    grid = make(seed + 1, (2, *out, n)) * 1.2  # a few points outside [-1, 1]
    check_op(
        lambda x, grid: F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners),
        [x, grid],
        expect_op="aten::grid_sampler.default",
        target_opset=opset,
    )


@pytest.mark.parametrize("n", [2, 3])
@given(data=st.data(), mode=st.sampled_from([0, 1]), padding_mode=st.sampled_from([0, 1, 2]))
def test_grid_sampler_nd(n, data, mode, padding_mode):
    seed = data.draw(seeds)
    size = [data.draw(st.integers(1, 5)) for _ in range(n)]
    x = make(seed, (1, 2, *size))
    grid = make(seed + 1, (1, *[3] * n, n))
    op = getattr(torch.ops.aten, f"grid_sampler_{n}d").default
    check_op(
        lambda x, grid: op(x, grid, mode, padding_mode, False),
        [x, grid],
        expect_op=f"aten::grid_sampler_{n}d.default",
        target_opset=20,
    )
