"""What torch.export needs to trace ``transformers`` models: the pack's export patches.

``tonnx.to_onnx`` (and ``tonnx.export_program``, ``tonnx.export_patches``) enter
:func:`export_patches` while the pack is enabled. Each part says which error it avoids:
the cache classes as pytree nodes (``cache.py``), the eager experts loop over every
expert (``eager_experts.py``), FSMT's decoder padding mask as a tensor always
(``padding_mask.py``) and FastSpeech2-Conformer's frame count read from its predicted
durations (``frame_count.py``). When ``transformers`` is not imported, nothing happens: the
pack costs an import of this module and nothing else.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def export_patches() -> Iterator[None]:
    """Makes ``transformers`` models traceable by ``torch.export`` (see the module docstring)."""
    if "transformers" not in sys.modules:
        yield
        return
    from .cache import cache_nodes
    from .eager_experts import every_expert
    from .frame_count import frames_from_durations
    from .padding_mask import padding_mask_always

    with cache_nodes(), every_expert(), padding_mask_always(), frames_from_durations():
        yield
