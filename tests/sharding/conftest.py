"""Fixtures shared by the sharding tests."""
from __future__ import annotations

import pytest

import arrayx as ax
from arrayx.core import executor as base

#: the executors whose devices are virtual (ARRAYX_VIRTUAL_DEVICES): every sharding runs there
VIRTUAL = ["numpy", "numba", "dask"]


@pytest.fixture(params=VIRTUAL)
def vex(request):
    """Each executor of virtual devices in turn (skipped where unavailable), as the current one."""
    if not base.get(request.param).available():
        pytest.skip(f"executor {request.param!r} unavailable")
    with ax.use_executor(request.param):
        yield request.param
