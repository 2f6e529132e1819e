"""The conformance suite reuses the unit tests' ``executor`` fixture (one run per registered executor)
and their tiers (``tests/tiers.py``: the slow marker and the executor markers)."""
import sys

import pytest

from tests.conftest import executor  # noqa: F401  (a pytest fixture, re-exported for this folder)


def pytest_configure(config) -> None:
    from tests import tiers

    tiers.register(config)


def _jax_disk_cache_settings(jax) -> tuple:
    return jax.config.jax_compilation_cache_dir, jax.config.jax_persistent_cache_min_compile_time_secs


@pytest.fixture(autouse=True)
def _jax_disk_cache_left_as_found():
    """A test that runs a command of the suite (``conformance.__main__``, ``conformance.differential``)
    turns on JAX's disk cache of compiled programs (``runner.keep_jax_programs_on_disk``), which is
    process-wide: without this, every XLA program the rest of the worker compiles (some 3,700 in the
    README's run) was serialised and written to ``$ARRAYX_CACHE_DIR/jax``.  After each test the two
    settings are put back and JAX's cache object is dropped (JAX keeps writing to the folder it
    opened while the minimum compile time is 0, whatever the folder setting says afterwards)."""
    jax = sys.modules.get("jax")
    before = _jax_disk_cache_settings(jax) if jax is not None else (None, None)
    yield
    jax = sys.modules.get("jax")
    if jax is None or _jax_disk_cache_settings(jax)[0] == before[0]:
        return
    jax.config.update("jax_compilation_cache_dir", before[0])
    if before[1] is not None:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", before[1])
    else:  # jax was imported by the test itself: its default
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    try:
        from jax._src import compilation_cache
    except ImportError:
        return
    reset = getattr(compilation_cache, "reset_cache", None)
    if reset is not None:
        reset()
