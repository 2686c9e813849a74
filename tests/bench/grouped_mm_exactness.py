"""How close the converted ``grouped_mm_fallback`` is to the eager op, in ulps of the result.

    python tests/bench/grouped_mm_exactness.py

One graph with a dynamic token count S, run at S=300 and S=123: K=64, N=96, E=4 experts of
which one receives no token, and rows past ``offs[-1]``.
"""

from __future__ import annotations

import numpy as np
import torch
import transformers.integrations.moe  # noqa: F401  (registers torch.ops.transformers)

import tonnx
from tonnx.testing import run_onnxruntime


class GroupedMM(torch.nn.Module):
    def forward(self, x, weight, offs):
        return torch.ops.transformers.grouped_mm_fallback(x, weight, offs)


def main() -> None:
    for dtype in (torch.float32, torch.float16):
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(300, 64, generator=gen).to(dtype)
        weight = torch.randn(4, 64, 96, generator=gen).to(dtype)
        offs = torch.tensor([50, 50, 200, 280], dtype=torch.int32)
        onx = tonnx.to_onnx(GroupedMM(), (x, weight, offs), dynamic_shapes=({0: "S"}, None, None))
        for rows in (300, 123):
            args = (x[:rows], weight, offs.clamp(max=rows))
            want = GroupedMM()(*args).numpy()
            got = run_onnxruntime(onx, list(args))[0]
            ulp = np.spacing(np.abs(want)).astype(np.float64)
            err = np.abs(want.astype(np.float64) - got.astype(np.float64)) / ulp
            exact = (want == got).all(axis=1).mean()
            print(f"{str(dtype):14s} S={rows}: max error {err.max():.0f} ulp, rows bit-identical {exact:.1%}")


if __name__ == "__main__":
    main()
