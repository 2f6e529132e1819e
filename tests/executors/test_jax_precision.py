"""arrayx.default_matmul_precision: the precision of float32 products on the jax executor, scoped.

On a CPU every precision computes float32 exactly, so these tests check that the setting reaches
JAX's own switch for arrayx's calls only (the user's JAX code keeps its own), and the values.  Where
the device's products deviate at JAX's default precision (a TPU: one bfloat16 pass,
``conformance/deviations.py``), each precision is checked at its own accuracy and "highest" must be
the more accurate; the time and error per precision on a TPU are benchmarks/bench_tpu.py's rows.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import arrayx as ax
from tests.executors.conftest import only_on
from tests.executors.platform_tolerances import PRODUCT_RTOL, tolerance

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


def _products(precision):
    """16 x 16 float32 products (K = 16) at ``precision``, eager and compiled, the exact product and
    the device that computed them."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 16, 16)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    with ax.default_matmul_precision(precision):
        x, y = ax.asarray(a), ax.asarray(b)
        eager = np.asarray(x @ y)
        compiled = np.asarray(ax.jit(lambda u, v: ax.tensordot(u, v, axes=1))(x, y))
    return (eager, compiled), want, x.device


def _deviates(device) -> bool:
    """Whether ``device``'s float32 products deviate at the default precision (a TPU's)."""
    return tolerance(np.float32, device, uses=("matmul",))["rtol"] == PRODUCT_RTOL["default"]


@pytest.mark.parametrize("precision", ["default", "high", "highest"])
def test_products_agree_at_every_precision(precision):
    """Float32 accuracy at every precision where products do not deviate (a CPU: 1e-5, as NumPy's);
    where they do, each precision's own: "default" one bfloat16 pass (1e-2 of the largest value),
    "high" three (1e-4), "highest" float32's (1e-5)."""
    got_both, want, device = _products(precision)
    scale = float(np.max(np.abs(want)))
    rtol = PRODUCT_RTOL[precision] if _deviates(device) else 1e-5
    for got in got_both:
        assert got.dtype == np.float32
        atol = 1e-5 if rtol <= 1e-5 else rtol * scale  # a pass's error follows the terms' size, not the result's
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{precision} on {device}")


def test_highest_is_float32_accurate_where_default_is_not():
    """Where products deviate (a TPU), "highest" is float32-accurate and many times more accurate
    than the default's one bfloat16 pass; elsewhere every precision is float32's."""
    errors = {}
    for precision in ("default", "highest"):
        got_both, want, device = _products(precision)
        errors[precision] = max(float(np.max(np.abs(g - want))) for g in got_both) / float(np.max(np.abs(want)))
    if _deviates(device):
        assert errors["highest"] < PRODUCT_RTOL["highest"], errors  # six bfloat16 passes: float32's accuracy
        assert errors["default"] > 30 * errors["highest"], errors  # one pass: 8 bits of mantissa against 24
    else:
        assert errors["default"] < 1e-6 and errors["highest"] < 1e-6, errors  # float32 rounding (8e-8 here)


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
