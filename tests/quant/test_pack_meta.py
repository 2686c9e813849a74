"""Meta-tests of the quant pack: every converter is tested and follows its op's schema."""

from __future__ import annotations

from pathlib import Path

import pytest

import torch.ao.quantization.fx._decomposed  # noqa: F401  registers quantized_decomposed
from tonnx.testing import assert_follows_schema, assert_pack_covered
from tonnx_quant._table import converters, torchao_installed

HERE = Path(__file__).parent

if torchao_installed():  # the torchao:: ops exist once torchao's quantization is imported
    import torchao.quantization.quant_primitives  # noqa: F401


def test_every_converter_has_a_conformance_test():
    assert_pack_covered("quant", HERE)


@pytest.mark.parametrize("conv", converters(), ids=lambda c: c.key)
def test_parameters_follow_the_schema(conv):
    assert_follows_schema(conv)
