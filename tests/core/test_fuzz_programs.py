"""Fuzzing the interpreter and the builder with generated programs (issue 8, section 5).

Hypothesis composes small programs from supported ops over tensors of broadcasting shapes,
several dtypes and optionally a dynamic batch dimension. Every program must either export
and match torch in onnxruntime (also at a second batch size when dynamic), or fail with a
typed ``tonnx.TonnxError``: never a crash, never a wrong number.

``TONNX_FUZZ_EXAMPLES=500 python -m pytest tests/core/test_fuzz_programs.py`` runs more.
"""

from __future__ import annotations

import os

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tonnx
from tonnx.testing import check_model

EXAMPLES = int(os.environ.get("TONNX_FUZZ_EXAMPLES", "25"))

UNARY = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "neg": torch.neg,
    "abs": torch.abs,
    "exp_clamped": lambda x: torch.exp(torch.clamp(x, max=5)),
    "sqrt_abs": lambda x: torch.sqrt(torch.abs(x)),
    "softmax_last": lambda x: torch.softmax(x, dim=-1),
    "cumsum_last": lambda x: torch.cumsum(x, dim=-1),
    "transpose_twice": lambda x: x.transpose(0, 1).transpose(0, 1).contiguous(),
    "sum_keepdim": lambda x: x.sum(dim=-1, keepdim=True),
    "amax_keepdim": lambda x: x.amax(dim=-1, keepdim=True),
    "mean_keepdim": lambda x: x.mean(dim=-1, keepdim=True),
    "flatten_unflatten": lambda x: x.reshape(x.shape[0], -1).reshape(x.shape),
    "square": lambda x: x * x,
    "cast_roundtrip": lambda x: x.to(torch.float64).to(x.dtype),
}
BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div_safe": lambda a, b: a / (torch.abs(b) + 1),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "where_gt": lambda a, b: torch.where(a > b, a, b),
    "add_scalar_mul": lambda a, b: a + 0.5 * b,
}


class Program(torch.nn.Module):
    """Runs a list of steps over a pool of values; each step appends its result."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def forward(self, *inputs):
        pool = list(inputs)
        for kind, name, operands in self.steps:
            args = [pool[i] for i in operands]
            pool.append(UNARY[name](*args) if kind == "unary" else BINARY[name](*args))
        return pool[-1], pool[len(inputs)]


@st.composite
def programs(draw):
    rank = draw(st.integers(2, 3))
    full = [draw(st.integers(2, 5)) for _ in range(rank)]
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    n_inputs = draw(st.integers(1, 3))
    # inputs broadcast against each other: each dimension full or 1 (the batch always full)
    shapes = [[full[0]] + [d if draw(st.booleans()) else 1 for d in full[1:]] for _ in range(n_inputs)]
    steps, size = [], n_inputs
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()) and size >= 1:
            steps.append(("unary", draw(st.sampled_from(sorted(UNARY))), [draw(st.integers(0, size - 1))]))
        else:
            a, b = draw(st.integers(0, size - 1)), draw(st.integers(0, size - 1))
            steps.append(("binary", draw(st.sampled_from(sorted(BINARY))), [a, b]))
        size += 1
    dynamic = draw(st.booleans())
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    inputs = tuple(torch.randn(*s, generator=gen, dtype=dtype) for s in shapes)
    other = tuple(torch.randn(full[0] + 2, *s[1:], generator=gen, dtype=dtype) for s in shapes)
    return steps, inputs, other, dynamic


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(case=programs())
def test_generated_program_exports_and_matches_or_fails_typed(case):
    steps, inputs, other, dynamic = case
    model = Program(steps)
    kwargs = {}
    if dynamic:
        kwargs["dynamic_shapes"] = tuple({0: "batch"} for _ in inputs)
    try:
        check_model(model, inputs, other_inputs=[other] if dynamic else [], atol=1e-5, rtol=1e-5, **kwargs)
    except (tonnx.UnsupportedError, tonnx.ConverterNotFoundError):
        pass  # a clear refusal is acceptable; wrong numbers, crashes and invalid graphs are not
