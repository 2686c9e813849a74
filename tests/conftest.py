"""Test configuration: hypothesis profiles (bounded in CI, deep on demand)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# CI: few examples per converter test so the suite stays well under 20 minutes on 2 cores.
settings.register_profile(
    "ci",
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# Deep: HYPOTHESIS_PROFILE=deep python -m pytest tests/aten
settings.register_profile(
    "deep",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session", autouse=True)
def _not_the_first_export_of_the_process():
    """Makes every export a test runs at least the second of its process, transformers imported.

    A defect that breaks only the second export (optree mirroring pytree registrations made
    around the first) hid behind test processes that exported once.
    """
    import torch

    import tonnx

    try:
        import transformers  # noqa: F401
    except ImportError:
        pass
    tonnx.to_onnx(torch.nn.Linear(2, 2), (torch.rand(1, 2),))
