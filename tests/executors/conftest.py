"""Fixtures shared by the executor tests."""
from __future__ import annotations

import pytest

import arrayx
from arrayx.core import executor as base
from arrayx.executors.common import buffer_pool as bp


@pytest.fixture
def pool_on():
    """The pool on for one test (the default, unless ARRAYX_BUFFER_POOL=0 or set_buffer_pool(False))."""
    numpy_ex, was = base.get("numpy"), bp.ENABLED
    numpy_ex.set_buffer_pool(True)
    yield numpy_ex.buffer_pool
    numpy_ex.set_buffer_pool(was)


def only_on(name: str) -> list:
    """``pytestmark`` of a module whose every test runs on executor ``name``: skipped with the reason
    where it is unavailable, else run inside ``use_executor(name)`` (the ``on_<name>`` fixture)."""
    ex = base.get(name)
    return [pytest.mark.skipif(not ex.available(), reason=f"executor {name!r} unavailable: {ex.unavailable_reason}"),
            pytest.mark.usefixtures(f"on_{name}")]


def _inside(name: str):
    @pytest.fixture
    def fixture():
        with arrayx.use_executor(name):
            yield

    return fixture


on_jax = _inside("jax")
on_numba = _inside("numba")


@pytest.fixture(params=["here", "taken-for-a-tpu"])
def jax_default_device(request, monkeypatch):
    """The jax executor's default device, as it is here and taken for a TPU: its platform reported
    as "tpu", so that it takes the 32-bit row of ``arrayx/api/_device_dtypes.py`` through the lookup
    a real TPU goes through (as ``tests/api/test_device_dtypes.py`` does), with a fresh downcast warning."""
    from arrayx.api import _device_dtypes

    ex = base.get("jax")
    if request.param != "here":
        monkeypatch.setattr(type(ex), "platform_of", lambda self, device: "tpu")
    _device_dtypes.clear_caches()
    _device_dtypes.reset_warning()
    try:
        yield ex.default_device()
    finally:
        monkeypatch.undo()
        _device_dtypes.clear_caches()
        _device_dtypes.reset_warning()
