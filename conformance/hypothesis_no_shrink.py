"""A pytest plugin for the official suite on a device where every new shape compiles (a TPU):
Hypothesis reports the first failing example it finds instead of shrinking it.

``python -m conformance.official --no-shrink`` loads it (``-p conformance.hypothesis_no_shrink``).
Shrinking a failure tries hundreds of smaller examples; on a TPU each of them compiles new programs
(about 1.5 s per example for ``test_qr``, measured on a TPU v5e), so one known failure took the
suite's run past ten minutes and looked like a hang.  Pass and fail are unchanged; only the failing
example a report shows is not the smallest one.
"""
from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)  # after the suite's conftest has loaded its own profile
def pytest_configure(config):
    from hypothesis import Phase, settings

    settings.register_profile("arrayx-no-shrink", parent=settings(),
                              phases=(Phase.explicit, Phase.reuse, Phase.generate))
    settings.load_profile("arrayx-no-shrink")
