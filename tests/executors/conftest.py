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
