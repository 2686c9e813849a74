"""The aten pack's rewrite rules: standard-domain fused ops (opset 23, TensorScatter 24)
where the converted graph spells out exactly their definition.

A model exported without the onnxruntime contrib pack then holds ``RMSNormalization`` and
``RotaryEmbedding`` where it held their primitive chains, and stays in the ``ai.onnx``
domain: any ONNX runtime with opset 23 runs it. Below opset 23, for other element types
than float32 and for any chain that is not exactly the op, the primitive ops stay.
"""

from __future__ import annotations

from tonnx.converters import RewriteRule

from .attention import attention_repeat_kv
from .rms_norm import rms_normalization
from .rotary import partial_rotary_embedding, rotary_embedding
from .tensor_scatter import tensor_scatter

#: below the pack's 100, as its decomposition converters: a pack's own rules at the default
#: priority run first and do not tie with these
PRIORITY = 50

REWRITES = (
    RewriteRule("rms_normalization", "Mul", rms_normalization, priority=PRIORITY),
    RewriteRule("rotary_embedding", "Add", rotary_embedding, priority=PRIORITY),
    RewriteRule("partial_rotary_embedding", "Concat", partial_rotary_embedding, priority=PRIORITY),
    RewriteRule("tensor_scatter", "ScatterElements", tensor_scatter, priority=PRIORITY),
    RewriteRule("attention_repeat_kv", "Attention", attention_repeat_kv, priority=PRIORITY),
)
