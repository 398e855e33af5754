"""Test-suite configuration: the hypothesis profiles.

``HYPOTHESIS_PROFILE`` selects one (default ``ci``):

* ``ci``: few examples per property, derandomised (the same examples on every run), no
  shrinking; ``tests/test_properties.py`` in about a minute on a 2-core machine;
* ``deep``: 25 times more examples, random seeds, no deadline (on demand).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking in CI: fast
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.register_profile(
    "deep", max_examples=2500, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
