"""The conformance suite reuses the unit tests' ``executor`` fixture (one run per registered executor)."""
from tests.conftest import executor  # noqa: F401  (a pytest fixture, re-exported for this folder)
