"""The sharding tutorial's programs (tests/sharding/tutorial.py) on every executor give jax.numpy's
values and shardings: jax with 8 forced host devices, numpy/numba with 8 virtual devices, dask with
8 virtual devices on a LocalCluster of 2 workers; each in its own process (XLA reads its flags once)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from arrayx.executors import base

HERE = pathlib.Path(__file__).parent
_RUNS: dict = {}


def _run(ex: str) -> dict:
    if ex not in _RUNS:
        env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", ARRAYX_VIRTUAL_DEVICES="8")
        proc = subprocess.run([sys.executable, str(HERE / "tutorial.py"), ex], capture_output=True, text=True,
                              env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        _RUNS[ex] = json.loads(proc.stdout.strip().splitlines()[-1])
    return _RUNS[ex]


def _available(name):
    ex = base.get(name)
    if not ex.available():
        pytest.skip(f"executor {name!r} unavailable: {ex.unavailable_reason}")


@pytest.fixture(scope="module")
def reference():
    _available("jax")
    return _run("jax")


def test_jax_reference_is_what_the_tutorial_says(reference):
    assert reference["sharded_spec"] == [["x"], ["y"]] and reference["n_devices"] == 8
    assert reference["elementwise_same_sharding"] is True
    assert reference["contract_spec"] == [["y"]]  # the sum over 'x' leaves the result replicated over 'x'
    assert reference["contract2_spec"] == [["x"]]
    assert reference["per_shard_sum"] == [6, 22, 38, 54, 70, 86, 102, 118]
    assert reference["psum"] == 496 and reference["psum_spec"] == []
    np.testing.assert_allclose(reference["layer_auto"], reference["layer"], rtol=1e-6)
    np.testing.assert_allclose(reference["layer_smap"], reference["layer"], rtol=1e-5)


@pytest.mark.parametrize("ex", ["numpy", "numba", "dask"])
def test_tutorial_matches_jax(ex, reference):
    _available(ex)
    got = _run(ex)
    assert set(got) == set(reference)
    for key, want in reference.items():
        have = got[key]
        if key == "unsharded_grid" or isinstance(want, str) or isinstance(want, bool) or key.endswith("spec"):
            assert have == want, (key, have, want)
        else:
            np.testing.assert_allclose(np.asarray(have, dtype=float), np.asarray(want, dtype=float), rtol=2e-6,
                                       atol=1e-6, err_msg=key)
