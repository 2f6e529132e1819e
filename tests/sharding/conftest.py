"""Fixtures shared by the sharding tests."""
from __future__ import annotations

import json
import os
import subprocess
import sys

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


def json_from_eight_jax_devices(code: str):
    """What ``code`` (a Python program printing one JSON line last) prints, run in a child process
    whose JAX has 8 CPU devices (the references of JAX's own collectives; this process keeps its own)."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    env.pop("ARRAYX_VIRTUAL_DEVICES", None)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600,
                          cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
