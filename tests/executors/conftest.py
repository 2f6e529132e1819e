"""Fixtures shared by the executor tests."""
from __future__ import annotations

import pytest

from arrayx.core import executor as base
from arrayx.executors.common import buffer_pool as bp


@pytest.fixture
def pool_on():
    """The pool on for one test (the default, unless ARRAYX_BUFFER_POOL=0 or set_buffer_pool(False))."""
    numpy_ex, was = base.get("numpy"), bp.ENABLED
    numpy_ex.set_buffer_pool(True)
    yield numpy_ex.buffer_pool
    numpy_ex.set_buffer_pool(was)
