"""arrayx.default_matmul_precision: the precision of float32 products on the jax executor, scoped.

On a CPU every precision computes float32 exactly, so these tests check that the setting reaches
JAX's own switch for arrayx's calls only (the user's JAX code keeps its own), and the values; the
effect on a TPU (time and error per precision) is benchmarks/bench_tpu.py's precision rows.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import arrayx as ax
from tests.executors.conftest import only_on

pytestmark = only_on("jax")


def _seen_by_jax():
    import jax

    return jax.config.jax_default_matmul_precision


def test_scope_reaches_arrayx_calls_only():
    from arrayx.executors.jax import x64

    scoped = x64.Scoped(_seen_by_jax)
    assert scoped() is None  # unset: JAX's own setting
    with ax.default_matmul_precision("highest"):
        assert scoped() == "highest"
        assert x64.call_scoped(_seen_by_jax, (), {}) == "highest"
        assert _seen_by_jax() is None  # the user's own JAX code, in the same block
        with ax.default_matmul_precision("bfloat16"):  # JAX's alias
            assert scoped() == "default"
        with ax.default_matmul_precision(None):
            assert scoped() is None
        assert scoped() == "highest"
    assert scoped() is None


@pytest.mark.parametrize("precision", ["default", "high", "highest"])
def test_products_agree_at_every_precision(precision):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 16, 16)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    with ax.default_matmul_precision(precision):
        x, y = ax.asarray(a), ax.asarray(b)
        eager = np.asarray(x @ y)
        compiled = np.asarray(ax.jit(lambda u, v: ax.tensordot(u, v, axes=1))(x, y))
    for got in (eager, compiled):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bad_name_raises():
    with pytest.raises(ValueError, match="default_matmul_precision: 'fast' is not a precision.*highest"):
        with ax.default_matmul_precision("fast"):
            pass


def test_environment_sets_the_process_default():
    code = ("import arrayx as ax, jax; from arrayx.executors.jax import x64; ax.asarray([1.0], device='jax');"
            "print(x64.call_scoped(lambda: jax.config.jax_default_matmul_precision, (), {}))")
    env = dict(os.environ, ARRAYX_MATMUL_PRECISION="float32", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "highest"
    env["ARRAYX_MATMUL_PRECISION"] = "fast"
    bad = subprocess.run([sys.executable, "-c", "import arrayx"], env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "ARRAYX_MATMUL_PRECISION" in bad.stderr
