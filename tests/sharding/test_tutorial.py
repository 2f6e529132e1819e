"""The sharding tutorial's programs (conformance/sharding.py, also the sharding rows of ``python -m
conformance``) on every executor give jax.numpy's values and shardings: jax with 8 forced host
devices, numpy/numba with 8 virtual devices, dask with 8 virtual devices on a LocalCluster of 2
workers; each in its own process (XLA reads its flags once)."""
from __future__ import annotations

import numpy as np
import pytest

from arrayx.core import executor as base
from conformance import sharding as programs

_RUNS: dict = {}


def _run(ex: str) -> dict:
    if ex not in _RUNS:
        _RUNS[ex] = programs.run_in_process(ex)
        assert "error" not in _RUNS[ex], _RUNS[ex]["error"]
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
    # eagerly, as under jit
    assert reference["eager_elementwise_same_sharding"] is True and reference["eager_keeps_operand_spec"] is True
    assert reference["eager_contract_spec"] == [["y"]] and reference["eager_sum_kept_axis_spec"] == [["x"]]
    np.testing.assert_allclose(reference["eager_layer"], reference["layer"], rtol=1e-5)


@pytest.mark.parametrize("ex", ["numpy", "numba", "dask"])
def test_tutorial_matches_jax(ex, reference):
    _available(ex)
    got = _run(ex)
    assert set(got) == set(reference)
    assert programs.mismatches(got, reference, sorted(reference)) == []
