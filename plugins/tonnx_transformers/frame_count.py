"""FastSpeech2-Conformer's frame count read from its predicted durations, during the export only.

The model repeats each phoneme's features by its predicted duration (``length_regulator``),
so the number of frames the decoder sees is known only at run time. Two places stop
``torch.export``; during the block each is replaced by code with the same numbers:

- ``length_regulator``: ``if duration_labels.sum() == 0:`` stops it with
  ``GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(u0, 1)``,
  and the per-row ``repeat_interleave`` writes into a buffer sized by a data-dependent max.
  Here the all-zero case is a ``torch.where`` written back into the durations (eager writes
  them in place too, and the model returns them), and each frame gathers its phoneme's
  features (``searchsorted`` of the frame in the cumulative durations), frames past a row's
  total set to zero: the same copies and zeros as the loop.
- the decoder's relative positional encoding (``FastSpeech2ConformerRelPositionalEncoding``)
  compares its 5000-position table with the frame count (``if pos_enc.size(1) >=
  x.size(1) * 2 - 1``): ``GuardOnDataDependentSymNode`` on ``2*u0 - 1 <= 9999``. When the
  length is data-dependent, the encoding is computed for that length by the module's own
  ``extend_pos_enc`` (what eager does past the table, with the values the table holds below
  it).
- the decoder's relative shift (``FastSpeech2ConformerAttention.shift_relative_position_tensor``)
  views the padded scores as ``(..., 2 * time, time)``: ``GuardOnDataDependentSymNode`` on
  ``Eq(u0, 1)``. For a data-dependent length, score ``(i, j)`` is gathered from column
  ``time - 1 - i + j``, the element the view reads.

A length known from the shapes (the encoder's) takes the module's own code in both.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

_MODULE = "transformers.models.fastspeech2_conformer.modeling_fastspeech2_conformer"
_ENCODING = "FastSpeech2ConformerRelPositionalEncoding"
_ATTENTION = "FastSpeech2ConformerAttention"


def length_regulator(encoded_embeddings, duration_labels, speaking_speed=1.0):
    """transformers' ``length_regulator`` without a Python branch or a loop over the batch."""
    import torch

    if speaking_speed <= 0:
        raise ValueError("`speaking_speed` must be greater than 0.")
    elif speaking_speed != 1.0:
        duration_labels = torch.round(duration_labels.float() * speaking_speed).long()
    # all durations zero: every one set to 1, in place as eager does
    duration_labels.copy_(torch.where(duration_labels.sum() == 0, 1, duration_labels))
    total = duration_labels.sum(dim=1)
    frames = torch.arange(total.max().item(), device=duration_labels.device)
    batch, length, width = encoded_embeddings.shape
    ends = duration_labels.cumsum(dim=1)
    phoneme = torch.searchsorted(ends, frames.expand(batch, -1).contiguous(), right=True)
    phoneme = phoneme.clamp(max=length - 1)  # frames past the row's total, zeroed below
    gathered = torch.gather(encoded_embeddings, 1, phoneme[..., None].expand(-1, -1, width))
    return torch.where((frames < total[:, None])[..., None], gathered, 0.0).float()


def _unbacked(size) -> bool:
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    return bool(free_unbacked_symbols(size))


def _encoding_forward(original):
    def forward(self, feature_representation):
        """The module's forward; for a data-dependent length, the encoding made for it."""
        if not _unbacked(feature_representation.size(1)):
            return original(self, feature_representation)
        pos_emb = self.extend_pos_enc(feature_representation)  # 2 * length - 1 positions
        hidden_states = feature_representation * self.input_scale
        return self.dropout(hidden_states), self.dropout(pos_emb)

    return forward


def _shift_method(original):
    def shift_relative_position_tensor(self, pos_tensor):
        """The module's shift; for a data-dependent length, the same elements by a gather."""
        import torch

        time = pos_tensor.size(2)
        if not _unbacked(time):
            return original(self, pos_tensor)
        rows = torch.arange(time, device=pos_tensor.device)
        column = (time - 1) - rows[:, None] + rows[None, :]
        return torch.gather(pos_tensor, 3, column.expand(*pos_tensor.shape[:2], -1, -1))

    return shift_relative_position_tensor


@contextlib.contextmanager
def frames_from_durations() -> Iterator[None]:
    """Replaces both (see the module docstring) while FastSpeech2-Conformer's module is loaded."""
    module = sys.modules.get(_MODULE)
    regulator = getattr(module, "length_regulator", None)
    encoding, attention = getattr(module, _ENCODING, None), getattr(module, _ATTENTION, None)
    shift = getattr(attention, "shift_relative_position_tensor", None)
    if None in (regulator, encoding, shift) or regulator is length_regulator:
        yield  # not loaded, not the code this patch knows, or an outer block
        return
    forward = encoding.forward
    module.length_regulator = length_regulator
    encoding.forward = _encoding_forward(forward)
    attention.shift_relative_position_tensor = _shift_method(shift)
    try:
        yield
    finally:
        module.length_regulator = regulator
        encoding.forward = forward
        attention.shift_relative_position_tensor = shift
