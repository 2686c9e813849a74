"""Random ops: ONNX draws its own numbers, so the tests check the distribution, not values.

Each test exports one op, checks that the random family's converter made the result, then
runs the model in onnxruntime (seeded with ``onnxruntime.set_seed``, so runs repeat) and
compares with torch eager what can be compared: shape and dtype exactly; the support (every
value in [low, high), integers where torch makes integers); and the mean and standard
deviation of a large sample, within 6 standard errors of the distribution's own (a bound a
correct sampler crosses about once in 10**8 draws).

onnxruntime (1.31, 1.32) has kernels for RandomUniform/RandomNormal(Like) up to opset 21
only (opset 22 added bfloat16 to them): the tests run at opsets 18 to 21.
"""

from __future__ import annotations

import math

import numpy as np
import onnxruntime
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.export import Dim

import tonnx
from tonnx.testing import run_onnxruntime

COVERS = {
    "aten::rand.default",
    "aten::rand.generator",
    "aten::randn.default",
    "aten::randn.generator",
    "aten::rand_like.default",
    "aten::rand_like.generator",
    "aten::randn_like.default",
    "aten::randn_like.generator",
    "aten::randint.default",
    "aten::randint.generator",
    "aten::randint.low",
    "aten::randint.low_generator",
    "aten::randint_like.default",
    "aten::randint_like.generator",
    "aten::randint_like.low_dtype",
    "aten::randint_like.low_generator_dtype",
    "aten::normal.Tensor_float",
    "aten::normal.float_Tensor",
    "aten::normal.Tensor_Tensor",
    "aten::normal.float_float",
    "aten::normal_functional.default",
    "aten::normal_.default",
    "aten::uniform.default",
    "aten::uniform_.default",
    "aten::bernoulli.default",
    "aten::bernoulli.p",
}

A = torch.ops.aten
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
#: a sample large enough for tight moments, small enough for a fast test
N = 40_000


class Op(torch.nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def draw(fn, args, key: str, *, seed: int = 0, dynamic_shapes=None, opset: int = 20):
    """(onnxruntime's result, eager's result) of ``fn(*args)``; ``key``'s converter made it.

    onnxruntime's python API returns no bfloat16 array: such a result is returned as float32
    by the model (an exact cast).
    """
    model = Op(fn)
    if model(*args).dtype == torch.bfloat16:
        model = Op(lambda *a: fn(*a).float())
    onx = tonnx.to_onnx(model, tuple(args), dynamic_shapes=dynamic_shapes, target_opset=opset)
    made_by = {
        p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.fx_node"
    }
    assert any(label.endswith(f": {key}") for label in made_by), (key, made_by)
    converters = {p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.converter"}
    assert any(c.startswith("aten:tonnx_aten.random.") for c in converters), converters
    onnxruntime.set_seed(seed)
    (got,) = run_onnxruntime(onx, list(args))
    expected = model(*args)
    assert got.shape == tuple(expected.shape)
    assert got.dtype == _numpy_dtype(expected.dtype), (got.dtype, expected.dtype)
    return got, expected


def _numpy_dtype(dtype: torch.dtype):
    return torch.empty(0, dtype=dtype).numpy().dtype


def _values(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64) if not isinstance(x, torch.Tensor) else x.double().numpy()


def assert_moments(x, mean: float, std: float) -> None:
    """Sample mean and std of ``x`` within 6 standard errors of ``mean`` and ``std``."""
    x = _values(x).ravel()
    n = x.size
    assert abs(x.mean() - mean) <= 6 * std / math.sqrt(n) + 1e-3 * std, (x.mean(), mean)
    # the standard error of a sample std is std / sqrt(2n) for a normal, below 1.2x that here
    assert abs(x.std() - std) <= 6 * 1.2 * std / math.sqrt(2 * n) + 1e-3 * std, (x.std(), std)


def assert_uniform(x, low: float, high: float) -> None:
    values = _values(x)
    assert values.min() >= low and values.max() < high, (values.min(), values.max())
    assert_moments(values, (low + high) / 2, (high - low) / math.sqrt(12))


@pytest.mark.parametrize("key", ["aten::rand.default", "aten::rand.generator"])
@given(dtype=st.sampled_from(FLOATS), opset=st.sampled_from([18, 20, 21]), seed=st.integers(0, 1000))
@settings(max_examples=2, deadline=None)
def test_rand(key, dtype, opset, seed):
    op = A.rand.default if key.endswith("default") else A.rand.generator
    extra = {} if key.endswith("default") else {"generator": None}
    got, _ = draw(lambda: op([N // 50, 50], dtype=dtype, **extra), [], key, seed=seed, opset=opset)
    assert_uniform(got, 0.0, 1.0)


@pytest.mark.parametrize("key", ["aten::randn.default", "aten::randn.generator"])
@given(dtype=st.sampled_from(FLOATS), seed=st.integers(0, 1000))
@settings(max_examples=2, deadline=None)
def test_randn(key, dtype, seed):
    op = A.randn.default if key.endswith("default") else A.randn.generator
    extra = {} if key.endswith("default") else {"generator": None}
    got, _ = draw(lambda: op([N], dtype=dtype, **extra), [], key, seed=seed)
    assert_moments(got, 0.0, 1.0)


@pytest.mark.parametrize("kind", ["rand_like", "randn_like"])
@pytest.mark.parametrize("overload", ["default", "generator"])
@given(dtype=st.sampled_from(FLOATS), result=st.sampled_from([None, torch.float64]), seed=st.integers(0, 1000))
@settings(max_examples=2, deadline=None)
def test_rand_like_with_a_dynamic_shape(kind, overload, dtype, result, seed):
    op = getattr(getattr(A, kind), overload)
    extra = {} if overload == "default" else {"generator": None}
    x = torch.zeros(N // 8, 8)  # cast in the model: onnxruntime's python API takes no bfloat16
    got, _ = draw(
        lambda t: op(t.to(dtype), dtype=result, **extra), [x], f"aten::{kind}.{overload}",
        seed=seed, dynamic_shapes=({0: Dim("n")},),
    )
    if kind == "rand_like":
        assert_uniform(got, 0.0, 1.0)
    else:
        assert_moments(got, 0.0, 1.0)


def test_rand_of_a_symbolic_size():
    """torch.rand(n, 4) with n a dynamic dimension of the input: the draw follows it."""
    x = torch.zeros(N // 4, 3)
    got, _ = draw(lambda t: torch.rand(t.shape[0], 4) + t[:, :1], [x], "aten::rand.default", dynamic_shapes=({0: Dim("n")},))
    assert_uniform(got, 0.0, 1.0)


RANDINT = {
    "aten::randint.default": lambda low, high, dtype, t: A.randint.default(high, [N], dtype=dtype),
    "aten::randint.generator": lambda low, high, dtype, t: A.randint.generator(high, [N], generator=None, dtype=dtype),
    "aten::randint.low": lambda low, high, dtype, t: A.randint.low(low, high, [N], dtype=dtype),
    "aten::randint.low_generator": lambda low, high, dtype, t: A.randint.low_generator(
        low, high, [N], generator=None, dtype=dtype
    ),
    "aten::randint_like.default": lambda low, high, dtype, t: A.randint_like.default(t, high, dtype=dtype),
    "aten::randint_like.generator": lambda low, high, dtype, t: A.randint_like.generator(
        t, high, generator=None, dtype=dtype
    ),
    "aten::randint_like.low_dtype": lambda low, high, dtype, t: A.randint_like.low_dtype(t, low, high, dtype=dtype),
    "aten::randint_like.low_generator_dtype": lambda low, high, dtype, t: A.randint_like.low_generator_dtype(
        t, low, high, generator=None, dtype=dtype
    ),
}


@pytest.mark.parametrize("key", sorted(RANDINT))
@given(
    low=st.integers(-5, 5),
    span=st.integers(1, 9),
    dtype=st.sampled_from([torch.int64, torch.int32, torch.uint8, torch.float32, torch.float16]),
    seed=st.integers(0, 1000),
)
@settings(max_examples=1, deadline=None)
def test_randint(key, low, span, dtype, seed):
    if "low" not in key or dtype == torch.uint8:
        low = max(low, 0)
    fn = RANDINT[key]
    x = torch.zeros(N, dtype=torch.float32)
    got, _ = draw(lambda t: fn(low, low + span, dtype, t), [x], key, seed=seed)
    values = _values(got)
    assert set(np.unique(values)) <= set(range(low, low + span)), np.unique(values)
    assert np.all(values == np.round(values))
    # each integer drawn with probability 1/span
    counts = np.array([(values == v).sum() for v in range(low, low + span)])
    p = 1 / span
    assert np.all(np.abs(counts / N - p) <= 6 * math.sqrt(p * (1 - p) / N) + 1e-9), counts


def test_randint_of_a_wide_range():
    """int64 bounds beyond float32: the draw goes through float64, every value in range."""
    low, high = -(2**40), 2**40 + 7
    got, _ = draw(lambda: torch.randint(low, high, (N,)), [], "aten::randint.low")
    assert got.min() >= low and got.max() < high
    assert_moments(got.astype(np.float64) / 2**40, 0.0, 2 / math.sqrt(12))


@given(
    mean=st.floats(-3, 3), std=st.floats(0.1, 4), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 1000)
)
@settings(max_examples=2, deadline=None)
def test_normal_of_numbers(mean, std, dtype, seed):
    got, _ = draw(lambda: torch.normal(mean, std, (N,), dtype=dtype), [], "aten::normal.float_float", seed=seed)
    assert_moments(got, mean, std)


NORMAL = {
    "aten::normal.Tensor_float": lambda m, s: A.normal.Tensor_float(m, 2.5),
    "aten::normal.float_Tensor": lambda m, s: A.normal.float_Tensor(-1.5, s),
    "aten::normal.Tensor_Tensor": lambda m, s: A.normal.Tensor_Tensor(m, s),
    "aten::normal_functional.default": lambda m, s: A.normal_functional.default(m, -1.5, 2.5),
    "aten::normal_.default": lambda m, s: torch.empty_like(m).normal_(-1.5, 2.5),
}


@pytest.mark.parametrize("key", sorted(NORMAL))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_normal_of_tensors(key, dtype):
    """Means and stds as tensors: the sample standardized by them is N(0, 1)."""
    gen = torch.Generator().manual_seed(0)
    mean = (torch.randint(-3, 4, (N // 4, 4), generator=gen) * 0.5).to(dtype)
    std = (torch.randint(1, 5, (N // 4, 4), generator=gen) * 0.5).to(dtype)
    got, _ = draw(NORMAL[key], [mean, std], key)
    expected_mean = mean if "Tensor_" in key else torch.full_like(mean, -1.5)
    expected_std = std if key.endswith("_Tensor") else torch.full_like(std, 2.5)
    z = (_values(got) - _values(expected_mean)) / _values(expected_std)
    assert_moments(z, 0.0, 1.0)


def test_normal_broadcasts_mean_and_std():
    """normal(mean [n, 1], std [4]) draws one number per element of the broadcast shape."""
    mean = torch.zeros(N // 4, 1)
    std = torch.tensor([0.5, 1.0, 2.0, 4.0])
    got, _ = draw(lambda m, s: torch.normal(m, s), [mean, std], "aten::normal.Tensor_Tensor")
    for column, s in enumerate(std.tolist()):
        assert_moments(got[:, column], 0.0, s)


@pytest.mark.parametrize("key", ["aten::uniform.default", "aten::uniform_.default"])
@given(low=st.floats(-4, 4), width=st.floats(0.01, 8), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 1000))
@settings(max_examples=2, deadline=None)
def test_uniform(key, low, width, dtype, seed):
    high = low + width
    low_t, high_t = (float(torch.tensor(v, dtype=dtype)) for v in (low, high))
    if not low_t < high_t:
        return  # the bounds meet in this dtype
    x = torch.zeros(N)  # cast in the model: onnxruntime's python API takes no bfloat16
    if key == "aten::uniform.default":
        fn = lambda t: A.uniform.default(t.to(dtype), low, high)  # noqa: E731
    else:
        fn = lambda t: torch.empty_like(t.to(dtype)).uniform_(low, high)  # noqa: E731
    got, _ = draw(fn, [x], key, seed=seed)
    values = _values(got)
    assert values.min() >= low_t and values.max() < high_t, (values.min(), values.max(), low_t, high_t)
    # rounding to the dtype moves each value by at most half a step of the bounds' magnitude
    step = float(torch.finfo(dtype).eps) * max(abs(low), abs(high))
    assert_moments(values, (low + high) / 2, width / math.sqrt(12) + step)


@pytest.mark.parametrize("key", ["aten::bernoulli.default", "aten::bernoulli.p"])
@given(p=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 1000))
@settings(max_examples=2, deadline=None)
def test_bernoulli(key, p, dtype, seed):
    x = torch.full((N,), p)  # cast in the model: onnxruntime's python API takes no bfloat16
    if key == "aten::bernoulli.default":
        fn = lambda t: torch.bernoulli(t.to(dtype))  # noqa: E731
    else:
        fn = lambda t: torch.bernoulli(torch.zeros_like(t.to(dtype)), p)  # noqa: E731
    got, _ = draw(fn, [x], key, seed=seed)
    values = _values(got)
    assert set(np.unique(values)) <= {0.0, 1.0}
    p = float(torch.tensor(p, dtype=dtype))
    assert abs(values.mean() - p) <= 6 * math.sqrt(p * (1 - p) / N) + 1e-9


def test_the_numbers_differ_from_torch_and_between_draws():
    """Documented: tonnx cannot reproduce torch's stream; two calls draw different numbers."""
    got, expected = draw(lambda: (torch.rand(2, 100), torch.rand(2, 100))[0], [], "aten::rand.default")
    assert not np.array_equal(got, expected.numpy())
    model = Op(lambda: torch.rand(2, 100) - torch.rand(2, 100))
    (diff,) = run_onnxruntime(tonnx.to_onnx(model, ()), [])
    assert np.all(diff != 0)  # the two draws were not merged into one node


def test_a_generator_is_refused():
    class WithGenerator(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gen = torch.Generator().manual_seed(0)

        def forward(self, x):
            return x + torch.randn(x.shape, generator=self.gen)

    with pytest.raises(tonnx.UnsupportedError, match="torch.Generator"):
        tonnx.to_onnx(WithGenerator(), (torch.zeros(3),))
