"""The ortcontrib pack's tests run against the installed distribution
(``pip install ./contrib_packs/tonnx-ortcontrib``), from the repository root."""

from __future__ import annotations

import os
import sys

from hypothesis import HealthCheck, settings

# the model list of tonnx's own tests (tests/models/transformer_models.py)
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

for _name, _examples in (("ci", 6), ("deep", 200)):
    settings.register_profile(
        _name,
        max_examples=_examples,
        deadline=None,
        derandomize=_name == "ci",
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
