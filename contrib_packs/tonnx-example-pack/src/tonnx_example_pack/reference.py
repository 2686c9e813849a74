"""Reference kernels of the pack's domain, for onnx's reference evaluator.

tonnx loads them through ``PackSpec.reference_kernels``; ``tonnx.testing.run_reference``
and ``tonnx.testing.ExtendedReferenceEvaluator`` use them with the other packs' kernels.
"""

from __future__ import annotations

import numpy as np
from onnx.reference.op_run import OpRun

from . import DOMAIN


class SoftClip(OpRun):
    """``bound * tanh(x / bound)``, computed in the input's dtype like torch's kernel."""

    op_domain = DOMAIN

    def _run(self, x, bound=None):
        bound = np.array(bound, dtype=x.dtype)
        return (bound * np.tanh(x / bound),)


KERNELS = (SoftClip,)
