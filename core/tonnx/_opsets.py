"""The main-domain opsets tonnx exports to, in one place: ``to_onnx``'s check, the CLI's
``--opset`` choices and the builder read them, and a test holds the docs to them."""

from __future__ import annotations

#: The default: opset 23 has the ``Attention``, ``RMSNormalization`` and ``RotaryEmbedding``
#: ops, which onnxruntime runs faster than their spelled-out form (attention models at
#: 0.88-0.92 of the time, docs/benchmarks.md), and every runtime tonnx is tested on runs it
#: (onnxruntime 1.31.1 and later, OpenVINO 2026). torch.onnx.export's default is 20: pass
#: ``target_opset=20`` for an older runtime.
DEFAULT_OPSET = 23
#: The oldest main-domain opset the converters emit.
MIN_OPSET = 18
#: The newest main-domain opset: onnxruntime 1.31.1 (the oldest runtime tonnx targets)
#: refuses a model importing opset 27 or later; 1.32 runs 24 to 26 too.
MAX_OPSET = 26
SUPPORTED_OPSETS = range(MIN_OPSET, MAX_OPSET + 1)
