"""FSMT's decoder padding mask as a tensor always, during the export only.

Without ``use_cache`` and without a ``decoder_attention_mask``, FSMT builds the decoder's
padding mask with ``make_padding_mask``, which returns ``None`` when no decoder token is the
pad token (``if not padding_mask.any()``), and ``torch.export`` stops there with
``GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(u0, 1)``
(the branch depends on the tokens' values). During the block, the function returns the mask
itself: the attention then runs ``masked_fill`` with an all-False mask where eager skipped
it, which leaves every score as it was, so the numbers are eager's, bit for bit.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

_MODULE = "transformers.models.fsmt.modeling_fsmt"


def make_padding_mask(input_ids, padding_idx=1):
    """True for pad tokens: FSMT's ``make_padding_mask`` without the ``None`` for no pad."""
    return input_ids.eq(padding_idx)


@contextlib.contextmanager
def padding_mask_always() -> Iterator[None]:
    """Replaces ``modeling_fsmt.make_padding_mask`` while FSMT's module is loaded and has it."""
    module = sys.modules.get(_MODULE)
    original = getattr(module, "make_padding_mask", None)
    if original is None or original is make_padding_mask:  # not loaded, or an outer block
        yield
        return
    module.make_padding_mask = make_padding_mask
    try:
        yield
    finally:
        if module.make_padding_mask is make_padding_mask:
            module.make_padding_mask = original
