"""pytest plugin of tonnx's kit, installed with tonnx (entry point ``pytest11``).

Opt-in, so that installing tonnx changes no other project's tests: a pack sets
``tonnx_profile = ci`` in its pytest configuration and its hypothesis tests run with the
bounded profile tonnx's CI uses (``HYPOTHESIS_PROFILE=deep`` picks the deep one). The
fixtures hand the kit's checks to tests that prefer fixtures to imports.
"""

from __future__ import annotations

import os

import pytest

PROFILES = {"ci": 6, "deep": 200}


def pytest_addoption(parser) -> None:
    parser.addini(
        "tonnx_profile",
        "hypothesis profile of tonnx's kit to load: ci (6 examples) or deep (200); "
        "HYPOTHESIS_PROFILE overrides it",
        default="",
    )


def pytest_configure(config) -> None:
    wanted = config.getini("tonnx_profile")
    if not wanted:
        return
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:
        raise pytest.UsageError("tonnx_profile is set but hypothesis is not installed") from None
    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large]
    for name, examples in PROFILES.items():
        settings.register_profile(
            name, max_examples=examples, deadline=None, derandomize=name == "ci",
            suppress_health_check=quiet,
        )
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", wanted))


@pytest.fixture
def check_op():
    """``tonnx.testing.check_op``: one op, exported and compared with torch eager."""
    from tonnx.testing import check_op

    return check_op


@pytest.fixture
def check_model():
    """``tonnx.testing.check_model``: a model, exported and compared with torch eager."""
    from tonnx.testing import check_model

    return check_model


@pytest.fixture
def run_reference():
    """``tonnx.testing.run_reference``: onnx's evaluator with the installed packs' kernels."""
    from tonnx.testing import run_reference

    return run_reference
