"""The pack's tests run against the installed distribution
(``pip install ./contrib_packs/tonnx-torchvision``) with torchvision's C ops loaded (CI's
second environment); each module skips, with the reason, where either is missing."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

for _name, _examples in (("ci", 6), ("deep", 200)):
    settings.register_profile(
        _name,
        max_examples=_examples,
        deadline=None,
        derandomize=_name == "ci",
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
