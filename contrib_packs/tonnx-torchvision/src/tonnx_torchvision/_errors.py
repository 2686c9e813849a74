"""The pack's refusal: an ``UnsupportedError`` that names the op, the case and why."""

from __future__ import annotations

from tonnx import UnsupportedError


class TorchvisionOpError(UnsupportedError):
    """A call of a torchvision op that no ONNX graph of this pack computes as torchvision does."""

    def __init__(self, op: str, case: str, why: str, fix: str = "") -> None:
        self.op, self.case, self.why = op, case, why
        message = f"torchvision::{op}: {case} is not converted: {why}"
        super().__init__(f"{message}. {fix}" if fix else message)
