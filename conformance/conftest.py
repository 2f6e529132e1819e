"""The conformance suite reuses the unit tests' ``executor`` fixture (one run per registered executor)
and their tiers (``tests/tiers.py``: the slow marker and the executor markers)."""
from tests.conftest import executor  # noqa: F401  (a pytest fixture, re-exported for this folder)


def pytest_configure(config) -> None:
    from tests import tiers

    tiers.register(config)
