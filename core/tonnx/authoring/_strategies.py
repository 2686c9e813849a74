"""Hypothesis strategies and tensor makers for converter tests (published by tonnx.testing).

Tensors are made from a drawn seed rather than drawn element by element: hypothesis then
explores shapes, dtypes and attributes (what changes a converter's graph) while the values
stay cheap to generate and reproducible from the failing example's seed.
"""

from __future__ import annotations

import math

FLOAT_DTYPES = ("float32", "float64", "float16")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
NUMBER_DTYPES = FLOAT_DTYPES + INT_DTYPES
ALL_DTYPES = NUMBER_DTYPES + ("bool",)


def _torch_dtype(name):
    import torch

    return name if not isinstance(name, str) else getattr(torch, name)


def make_tensor(seed: int, shape, dtype="float32", low: float = -4.0, high: float = 4.0):
    """Values uniform in [low, high] (integers rounded, bool a coin flip), fixed by ``seed``."""
    import torch

    dtype = _torch_dtype(dtype)
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(tuple(shape), generator=gen) > 0.5
    values = torch.rand(tuple(shape), generator=gen, dtype=torch.float64) * (high - low) + low
    return values.to(dtype) if dtype.is_floating_point else values.round().to(dtype)


def with_specials(t, seed: int):
    """``t`` with nan, inf, -inf, 0 and -0 at a few positions (float tensors only)."""
    import torch

    if not t.is_floating_point() or t.numel() < 2:
        return t
    gen = torch.Generator().manual_seed(seed + 1)
    flat = t.clone().reshape(-1)
    specials = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0], dtype=t.dtype)
    where = torch.randperm(flat.numel(), generator=gen)[: min(flat.numel() // 2, 5)]
    flat[where] = specials[: len(where)]
    return flat.reshape(t.shape)


def tolerance(*dtypes) -> dict:
    """``atol``/``rtol`` for ``check_op``: loose for float16/bfloat16, tight otherwise."""
    import torch

    names = {_torch_dtype(d) for d in dtypes}
    if names & {torch.float16, torch.bfloat16}:
        return {"atol": 1e-2, "rtol": 1e-2}
    return {"atol": 1e-5, "rtol": 1e-5}


# -- strategies --------------------------------------------------------------------------------


def seeds():
    """Seeds for :func:`make_tensor`."""
    from hypothesis import strategies as st

    return st.integers(0, 2**16)


def dtypes(names=FLOAT_DTYPES):
    """torch dtypes among ``names`` (``FLOAT_DTYPES``, ``NUMBER_DTYPES``, ``ALL_DTYPES``...)."""
    from hypothesis import strategies as st

    return st.sampled_from([_torch_dtype(n) for n in names])


def shapes(min_rank: int = 0, max_rank: int = 4, min_side: int = 1, max_side: int = 4):
    """Tensor shapes as tuples of ints."""
    from hypothesis import strategies as st

    side = st.integers(min_side, max_side)
    return st.lists(side, min_size=min_rank, max_size=max_rank).map(tuple)


def broadcast_shapes(max_rank: int = 4, max_side: int = 4):
    """Pairs of shapes that broadcast together: a suffix of one, some sizes set to 1."""
    from hypothesis import strategies as st

    @st.composite
    def pairs(draw):
        a = tuple(draw(st.lists(st.integers(1, max_side), max_size=max_rank)))
        b = a[draw(st.integers(0, len(a))) :]
        b = tuple(1 if draw(st.booleans()) else d for d in b)
        return (b, a) if draw(st.booleans()) else (a, b)

    return pairs()


def tensors(shape=None, dtype=None, low: float = -4.0, high: float = 4.0, specials: bool = False):
    """torch tensors: ``shape``/``dtype`` fixed values or strategies (default: any shape up to
    rank 4, float32); values from a drawn seed, with nan/inf/0/-0 sprinkled if ``specials``."""
    from hypothesis import strategies as st

    def strategy(value, default):
        if value is None:
            return default
        return value if isinstance(value, st.SearchStrategy) else st.just(value)

    @st.composite
    def draw_tensor(draw):
        seed = draw(seeds())
        t = make_tensor(seed, draw(strategy(shape, shapes())), draw(strategy(dtype, st.just("float32"))), low, high)
        return with_specials(t, seed) if specials else t

    return draw_tensor()
