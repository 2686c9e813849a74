"""Whole programs in prims: a module calling ``torch.ops.prims`` in its forward, and models
of the model list decomposed by torch's ``_refs`` (``TorchRefsMode``) down to prims, each
exported by tonnx and compared with torch in onnxruntime."""

from __future__ import annotations

import torch
from models import transformer_models as T
from models import vision_nets as V
from torch._prims.context import TorchRefsMode
from torch.fx.experimental.proxy_tensor import make_fx

from tonnx.testing import check_model

P = torch.ops.prims
CPU = torch.device("cpu")


class PrimsNorm(torch.nn.Module):
    """RMS normalisation, a masked softmax and positions, written with prims only."""

    def __init__(self, width: int = 8):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, width))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        n, width = x.shape
        half = P.convert_element_type(x, torch.float16)
        wide = P.convert_element_type(half, torch.float32)
        mean_square = P.div(P.sum(P.mul(wide, wide), [1]), float(width))
        scale = P.rsqrt(P.add(mean_square, 1e-6))
        normed = P.mul(wide, P.broadcast_in_dim(scale, [n, width], [0]))
        normed = P.mul(normed, P.broadcast_in_dim(self.weight, [n, width], [1]))
        positions = P.iota(width, start=0, step=1, dtype=torch.int64, device=CPU, requires_grad=False)
        mask = P.lt(P.broadcast_in_dim(positions, [n, width], [1]), 5)
        masked = P.where(mask, normed, float("-inf"))
        peak = P.broadcast_in_dim(P.amax(masked, [1]), [n, width], [0])
        e = P.exp(P.sub(masked, peak))
        softmax = P.div(e, P.broadcast_in_dim(P.sum(e, [1]), [n, width], [0]))
        spread = P.var(x, [0], 1.0)
        flipped = P.rev(P.transpose(P.split_dim(normed, 1, 2), [1, 0, 2]), [0])
        return softmax, spread, P.collapse(flipped, 1, 2)


def test_module_calling_prims_exports_and_matches():
    model = PrimsNorm()
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0))
    y = torch.randn(5, 8, generator=torch.Generator().manual_seed(1))
    onx = check_model(
        model,
        (x,),
        dynamic_shapes=({0: "batch"},),
        other_inputs=[(y,)],
        expect_ops=["prims::broadcast_in_dim.default", "prims::var.default", "prims::iota.default"],
        atol=1e-5,
        rtol=1e-5,
    )
    converters = {
        p.value for n in onx.graph.node for p in n.metadata_props if p.key == "pkg.tonnx.converter"
    }
    assert converters and all(c.startswith("prims:") for c in converters), converters


def _decomposed(model, args):
    """The program of ``model`` re-traced through torch's references, down to prims."""
    program = torch.export.export(model.eval(), args).module()
    with TorchRefsMode(strict=False):
        return make_fx(lambda *a: program(*a))(*args)


def test_llama_decomposed_to_prims():
    model, args = T.llama()
    expected = [
        "prims::broadcast_in_dim.default", "prims::as_strided.default", "prims::split_dim.default",
        "prims::iota.default", "prims::rsqrt.default", "prims::sum.default", "prims::view_of.default",
    ]
    check_model(_decomposed(model, args), args, expect_ops=expected, atol=1e-4, rtol=1e-4)


def test_cnn_decomposed_to_prims():
    """ReLU becomes prims.le + prims.where, tanh prims.tanh; convolutions stay ATen."""
    model = V.dcgan_generator(ngf=4)
    args = (torch.randn(2, 100, 1, 1, generator=torch.Generator().manual_seed(0)),)
    expected = ["prims::where.default", "prims::le.default", "prims::tanh.default"]
    check_model(_decomposed(model, args), args, expect_ops=expected, atol=1e-4, rtol=1e-4)
