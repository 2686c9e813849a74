"""The main-domain opsets tonnx exports to, in one place: ``to_onnx``'s check, the CLI's
``--opset`` choices and the builder read them, and a test holds the docs to them."""

from __future__ import annotations

#: torch.onnx.export's default opset, so a model exported by either has the same ops.
#: 23 (Attention, RMSNormalization, RotaryEmbedding) runs attention models faster but is not
#: the default yet: onnxruntime has no random-op kernels from 22, and the aten pack's opset-23
#: rewrites take the chains the ortcontrib pack fuses (docs/benchmarks.md, "Opset 23").
DEFAULT_OPSET = 20
#: The oldest main-domain opset the converters emit.
MIN_OPSET = 18
#: The newest main-domain opset: onnxruntime 1.31.1 (the oldest runtime tonnx targets)
#: refuses a model importing opset 27 or later; 1.32 runs 24 to 26 too.
MAX_OPSET = 26
SUPPORTED_OPSETS = range(MIN_OPSET, MAX_OPSET + 1)
