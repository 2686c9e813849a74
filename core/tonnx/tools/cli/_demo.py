"""``tonnx demo``: export a small transformer and a small CNN, check both in onnxruntime."""

from __future__ import annotations

import os
import time

from tonnx.tools.cli import _codes


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="export a small transformer and CNN, check them in onnxruntime")
    p.add_argument("-o", "--output-dir", default="tonnx_demo",
                   help="folder for the .onnx files (default ./tonnx_demo)")
    p.set_defaults(run=run)


def run(args) -> int:
    import tonnx

    from tonnx.tools.cli import _demo_models
    from tonnx.tools.cli._verify import verify

    os.makedirs(args.output_dir, exist_ok=True)
    ok = True
    for name, make in (("transformer", _demo_models.transformer), ("cnn", _demo_models.cnn)):
        model, inputs, dynamic_shapes, others = make()
        path = os.path.join(args.output_dir, f"{name}.onnx")
        begin = time.perf_counter()
        onx = tonnx.to_onnx(model, inputs, dynamic_shapes=dynamic_shapes, filename=path)
        elapsed = time.perf_counter() - begin
        print(f"{name}: exported in {elapsed * 1000:.0f} ms to {os.path.abspath(path)} "
              f"({len(onx.graph.node)} nodes, {sum(p.numel() for p in model.parameters()):,} parameters)")
        for feeds in (inputs, *others):
            checks = verify(path, onx, model, feeds, {}, atol=1e-4, rtol=1e-4)
            shapes = ", ".join(str(list(t.shape)) for t in feeds)
            worst = max(c.max_abs_diff for c in checks)
            good = all(c.ok for c in checks)
            ok &= good
            print(f"  onnxruntime vs torch on input {shapes}: max abs diff {worst:.2e} "
                  f"({'ok' if good else 'FAILED'})")
    print(f"see a model with: tonnx show {os.path.join(args.output_dir, 'cnn.onnx')}")
    return _codes.OK if ok else _codes.VERIFY_FAILED
