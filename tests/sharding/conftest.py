"""Fixtures shared by the sharding tests."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

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


#: the start of every program of :func:`jax_mesh_json`: JAX's 8 devices as a 2 x 4 mesh ``jm`` over the
#: axes ("x", "y"), ``JP`` for its partition specs, arrayx as ``ax``, ``json`` and NumPy
MESH_2X4 = textwrap.dedent("""
    import json
    import numpy as np, jax
    import arrayx as ax
    jm = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    JP = jax.sharding.PartitionSpec
""")


def jax_mesh_json(body: str):
    """:func:`json_from_eight_jax_devices` of ``body`` after :data:`MESH_2X4` (skipped where the jax
    executor is unavailable)."""
    if not base.get("jax").available():
        pytest.skip("executor 'jax' unavailable")
    return json_from_eight_jax_devices(MESH_2X4 + textwrap.dedent(body))
