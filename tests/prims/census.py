"""Which ``prims`` ops torch's ``_refs`` decompositions produce for the model list.

Run from the repository root: ``python tests/prims/census.py``. Each model is exported with
``torch.export``, then its graph is re-traced with ``make_fx`` under
``torch._prims.context.TorchRefsMode``, which replaces every ATen op that has a ``_refs`` or
``torch._decomp`` implementation by that implementation, down to ``torch.ops.prims``. The
script prints, per prim, the models producing it and the total count of calls; the ATen ops
that stay ATen (no reference implementation) are listed last. With ``--convert``, each
decomposed program is also exported by tonnx and run in onnxruntime against torch.
"""

from __future__ import annotations

import collections
import sys
import time
from pathlib import Path

import torch
from torch._prims.context import TorchRefsMode
from torch.fx.experimental.proxy_tensor import make_fx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import transformer_models as T  # noqa: E402
from models import vision_nets as V  # noqa: E402


def _image(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def _word_language_model():
    model = V.word_language_model("LSTM")
    tokens = torch.randint(0, model.ntoken, (7, 3), generator=torch.Generator().manual_seed(0))
    return model, (tokens, model.init_hidden(3))


def models() -> dict:
    found = {name: build for name, build in T.MODELS.items()}
    found.update({
        "alexnet": lambda: (V.alexnet(), (_image(1, 3, 224, 224),)),
        "vgg11_bn": lambda: (V.vgg11(True), (_image(1, 3, 224, 224),)),
        "resnet18": lambda: (V.resnet18(), (_image(2, 3, 64, 64),)),
        "densenet121": lambda: (V.densenet121(), (_image(2, 3, 64, 64),)),
        "inception_v3": lambda: (V.inception_v3(), (_image(2, 3, 75, 75),)),
        "dcgan": lambda: (V.dcgan_generator(), (_image(2, 100, 1, 1),)),
        "super_resolution": lambda: (V.super_resolution(), (_image(1, 1, 32, 32),)),
        "word_language_model": _word_language_model,
    })
    return found


def decomposed(model, args):
    """``model``'s program re-traced through torch's references, down to prims."""
    gm = torch.export.export(model.eval(), args).module()
    with TorchRefsMode(strict=False):
        return make_fx(lambda *a: gm(*a))(*args)


def census(traced) -> collections.Counter:
    """Counts the ops of a decomposed program."""
    return collections.Counter(
        str(n.target) for n in traced.graph.nodes if n.op == "call_function"
    )


def convert(traced, args) -> str:
    """Exports the decomposed program with tonnx; max abs diff with torch in onnxruntime."""
    from tonnx.testing import check_model

    try:
        onx = check_model(traced, args, atol=1e-4, rtol=1e-4)
    except Exception as e:  # reported per model, with the reason
        return f"FAILED {type(e).__name__}: {str(e).splitlines()[0][:160]}"
    return f"matches torch (atol 1e-4), {len(onx.graph.node)} ONNX nodes"


def main() -> None:
    per_op: dict[str, dict[str, int]] = collections.defaultdict(dict)
    start = time.perf_counter()
    for name, build in models().items():
        model, args = build()
        try:
            traced = decomposed(model, args)
        except Exception as e:  # a model torch cannot re-trace is reported, not hidden
            print(f"{name}: FAILED {type(e).__name__}: {str(e)[:200]}")
            continue
        for op, n in census(traced).items():
            per_op[op][name] = n
        if "--convert" in sys.argv:
            print(f"{name:22s} {convert(traced, args)}")
    print(f"# {len(models())} models in {time.perf_counter() - start:.1f} s")
    for kind in ("prims.", "aten."):
        print(f"\n## {kind[:-1]}")
        for op in sorted(k for k in per_op if k.startswith(kind)):
            users = per_op[op]
            print(f"{op:45s} {sum(users.values()):6d}  {', '.join(sorted(users))}")


if __name__ == "__main__":
    main()
