"""The pack's converter table: every family module's CONVERTERS, gathered on load."""

from __future__ import annotations

import importlib
import importlib.util

#: One module per op family; each defines CONVERTERS, a tuple of tonnx.Converter.
FAMILIES = (
    "per_tensor",
    "per_channel",
    "per_token",
    "choose_qparams",
    "groupwise",
    "fake_quant",
    "int8_weight",
    "dequantized_linear",
)

#: torchao's ops exist only once torchao is imported: converted when it is installed.
TORCHAO_FAMILIES = ("torchao_affine",)


def torchao_installed() -> bool:
    return importlib.util.find_spec("torchao") is not None


def converters() -> list:
    found = []
    families = FAMILIES + (TORCHAO_FAMILIES if torchao_installed() else ())
    for family in families:
        module = importlib.import_module(f"{__package__}.{family}")
        found.extend(module.CONVERTERS)
    return found
