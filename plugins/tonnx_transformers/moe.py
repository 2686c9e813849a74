"""``transformers::grouped_mm_fallback``: the experts matmul of transformers' MoE layers.

The op (``transformers/integrations/moe.py``) multiplies row ``s`` of ``input`` (S, K),
rows sorted by expert, by ``weight[e]`` (E, K, N), where ``offs`` (E,) holds the
cumulative token counts: expert ``e`` owns rows ``offs[e-1] <= s < offs[e]``, so
``e = #{i : offs[i] <= s}``; rows at or past ``offs[-1]`` stay zero. Token counts vary
per input, so nothing here depends on a value: ``e`` is computed per row in the graph.

Formulation: one broadcast MatMul of the input against every expert, (E, S, N), then
``GatherElements`` picks each row's expert. It costs E times the useful multiply-adds and
an (E, S, N) intermediate; the alternative, gathering each row's weight matrix
(``Gather(weight, e)``, then a batched (S, 1, K) x (S, K, N) MatMul), does only the useful
multiply-adds but materializes an (S, K, N) copy of the weights: K*N/E times more memory
than (E, S, N) (for Mixtral-8x7B, 14336*4096/8 = 7.3M times). ``offs`` is taken as
transformers builds it, non-decreasing (a cumulative sum).
"""

from __future__ import annotations

from onnx import TensorProto

from tonnx import Converter
from tonnx.converters import cast, named, opmath_type, shape_of, shape_tensor


def _expert_of_row(g, input: str, offs: str) -> str:
    """(S,) int64: ``#{i : offs[i] <= s}`` for every row ``s`` of ``input``."""
    rows = g.op.Range(0, g.op.Squeeze(shape_of(g, input, 0, 1), [0]), 1)
    offs = cast(g, offs, TensorProto.INT64)
    before = g.op.LessOrEqual(g.op.Unsqueeze(offs, [0]), g.op.Unsqueeze(rows, [1]))  # (S, E)
    return g.op.ReduceSum(g.op.Cast(before, to=TensorProto.INT64), [1], keepdims=0)


# transformers::grouped_mm_fallback.default
def transformers_grouped_mm_fallback(g, sts, outputs, input, weight, offs):
    "grouped_mm_fallback(Tensor input, Tensor weight, Tensor offs) -> Tensor"
    elem = sts.dtype
    compute = opmath_type(elem)  # torch's CPU mm accumulates float16/bfloat16 in float32
    expert = _expert_of_row(g, input, offs)
    n_experts = shape_of(g, weight, 0, 1)
    clamped = g.op.Min(expert, g.op.Sub(n_experts, 1))  # rows past offs[-1] masked below
    every = g.op.MatMul(cast(g, input, compute), cast(g, weight, compute))  # (E, S, N)
    index = g.op.Expand(
        g.op.Unsqueeze(clamped, [0, 2]),
        shape_tensor(g, [1, shape_of(g, input, 0, 1), shape_of(g, weight, 2, 3)]),
    )
    picked = cast(g, g.op.Squeeze(g.op.GatherElements(every, index, axis=0), [0]), elem)
    valid = g.op.Unsqueeze(g.op.Less(expert, n_experts), [1])
    zero = g.op.CastLike(0, picked)
    return named(g, g.op.Where(valid, picked, zero), outputs[0])


CONVERTERS = (
    Converter("transformers::grouped_mm_fallback.default", transformers_grouped_mm_fallback),
)
