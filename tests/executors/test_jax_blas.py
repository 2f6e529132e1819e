"""Large eager float64 products of the jax executor on one CPU device through NumPy's BLAS
(arrayx/executors/jax/blas.py): which products go there, that their values are the NumPy
executor's bit for bit (special values and subnormal results included), that traced and compiled
products stay XLA's, and that the setting turns the route off."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import config
from tests.conftest import assert_matches_numpy, assert_same, on_numpy
from tests.executors.conftest import only_on

ROWS = 20_000  # k = 20,000 and m = n = 64: 82M multiply-adds, routed (blas.worth)


def _data(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def test_a_gram_product_on_every_executor_is_the_numpy_executors(executor):
    x = xp.asarray(_data((ROWS, 64)))
    y = xp.asarray(_data((ROWS, 48), seed=1))
    assert_matches_numpy(lambda a: a.T @ a, x)
    assert_matches_numpy(lambda a, b: a.T @ b, x, y)
    assert_matches_numpy(lambda a, b: xp.matrix_transpose(a) @ b, x, y)


# -- the jax executor's route ---------------------------------------------------------------------

def _blas():
    from arrayx.executors.jax import blas

    return blas


def _routed():
    return _blas().stats()["routed"]


@pytest.fixture
def route():
    """The route's module, skipped where this process's JAX is not one CPU device (it is off there)."""
    blas = _blas()
    import jax

    devices = jax.devices()
    if not (len(devices) == 1 and devices[0].platform == "cpu"):
        assert not blas.ENABLED  # never for an accelerator or several devices
        pytest.skip("the BLAS route is only on for a process whose JAX has one CPU device")
    if not blas.ENABLED:
        pytest.skip("ARRAYX_JAX_BLAS_MATMUL=0 in this process")
    return blas


def _exact(got, want_fn, *args):
    """``got`` (jax executor) is the NumPy executor's result bit for bit (NaN where NaN)."""
    want = np.asarray(on_numpy(want_fn, *args))
    g = np.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape
    assert np.array_equal(g.view(np.uint64), want.view(np.uint64)) or np.array_equal(g, want, equal_nan=True), \
        f"{int(np.sum(g != want))} of {g.size} elements differ from the numpy executor's"


def _on_jax(fn):
    """Run ``fn`` inside ``use_executor("jax")``, skipped with the reason where JAX is unavailable."""
    for mark in only_on("jax"):
        fn = mark(fn)
    return fn


@pytest.mark.parametrize("form", ["x.T @ x", "x.T @ y", "a @ b", "mT(x) @ y"])
@_on_jax
def test_long_inner_products_go_through_blas_with_the_numpy_executors_bits(route, form):
    x = xp.asarray(_data((ROWS, 64)))
    y = xp.asarray(_data((ROWS, 32), seed=1))
    a = xp.asarray(_data((64, ROWS), seed=2))
    fn = {"x.T @ x": lambda x, y, a: x.T @ x, "x.T @ y": lambda x, y, a: x.T @ y,
          "a @ b": lambda x, y, a: a @ x, "mT(x) @ y": lambda x, y, a: xp.matrix_transpose(x) @ y}[form]
    before = _routed()
    got = fn(x, y, a)
    assert _routed() == before + 1
    assert got.dtype == xp.float64 and got.device == x.device
    _exact(got, fn, x, y, a)
    # the result is an ordinary jax.Array: further operations and host copies work on it
    assert_same(got * 2.0 + 1.0, np.asarray(got) * 2.0 + 1.0)
    host = np.asarray(got)
    host[0, 0] = 123.0  # a writeable copy, the array unchanged
    assert float(got[0, 0]) != 123.0


@_on_jax
def test_the_result_is_taken_without_a_copy(route):
    x = xp.asarray(_data((ROWS, 64)))
    out = x.T @ x
    assert out._buf.unsafe_buffer_pointer() % route.ALIGN == 0
    assert out._buf.__class__ is type(x._buf)


@_on_jax
def test_special_values_and_subnormal_results_are_numpys(route):
    host = _data((ROWS, 64))
    host[5, 0], host[7, 1], host[9, 2], host[11, 3] = np.nan, np.inf, -np.inf, -0.0
    host[:, 4] = 0.0
    host[:, 5] = -0.0  # a column of -0: its products sum to +0, as NumPy's (XLA:CPU would give -0)
    host[:, 6] = 0.0
    host[0, 6] = 1e-160  # 1e-160 * 1e-160: a subnormal result NumPy keeps (XLA:CPU flushes it to zero)
    x = xp.asarray(host)
    before = _routed()
    got = x.T @ x
    assert _routed() == before + 1
    _exact(got, lambda a: a.T @ a, x)
    g = np.asarray(got)
    assert g[6, 6] == 1e-160 * 1e-160 != 0.0
    assert np.signbit(g[5, 5]) == np.signbit((host[:, 5] @ host[:, 5]))


@pytest.mark.parametrize("case", ["float32", "int64", "short inner", "wide result", "small", "1-D", "stack"])
@_on_jax
def test_other_products_stay_xlas(route, case):
    rng = np.random.default_rng(3)
    a_shape, b_shape, dtype = {
        "float32": ((64, ROWS), (ROWS, 64), np.float32),
        "int64": ((64, ROWS), (ROWS, 64), np.int64),
        "short inner": ((2_000, 64), (64, 4_000), np.float64),  # scikit-learn's X @ Y.T: XLA as fast
        "wide result": ((4_000, 4_096), (4_096, 64), np.float64),  # XLA faster (benchmarks/bench_jax_blas.py)
        "small": ((64, 2_000), (2_000, 64), np.float64),  # under blas.MIN_MACS
        "1-D": ((ROWS,), (ROWS, 64), np.float64),
        "stack": ((2, 64, ROWS), (2, ROWS, 64), np.float64),
    }[case]
    a = xp.asarray((rng.normal(size=a_shape) * 10).astype(dtype))
    b = xp.asarray((rng.normal(size=b_shape) * 10).astype(dtype))
    before = _routed()
    assert_matches_numpy(lambda a, b: a @ b, a, b)
    assert _routed() == before


@_on_jax
def test_traced_and_compiled_products_stay_xlas(route):
    import jax

    x = xp.asarray(_data((ROWS, 64)))
    before = _routed()
    jitted = xp.jit(lambda a: a.T @ a)(x)
    with xp.lazy():
        lazy = x.T @ x
        lazy = np.asarray(lazy)
    assert _routed() == before
    host = np.asarray(x)
    with jax.enable_x64(True):
        want = np.asarray(jax.jit(lambda a: a.T @ a)(jax.numpy.asarray(host)))
    np.testing.assert_array_equal(np.asarray(jitted), want)  # XLA's product, bit for bit
    np.testing.assert_array_equal(lazy, want)
    np.testing.assert_allclose(np.asarray(jitted), host.T @ host, rtol=1e-12, atol=1e-10 * ROWS)


@_on_jax
def test_turned_off_every_product_is_xlas(route, monkeypatch):
    import jax

    x = xp.asarray(_data((ROWS, 64)))
    monkeypatch.setattr(route, "ENABLED", False)
    before = _routed()
    got = np.asarray(x.T @ x)
    assert _routed() == before
    host = np.asarray(x)
    with jax.enable_x64(True):
        want = np.asarray(jax.jit(lambda a: a.T @ a)(jax.numpy.asarray(host)))
    np.testing.assert_array_equal(got, want)


@_on_jax
def test_a_recorded_elementwise_operand_is_computed_then_routed(route):
    # xpx.cov's shape: the centred data (a large subtract, recorded by fused.py) times its transpose
    x = xp.asarray(_data((ROWS, 64)))
    m = x.T
    c = m - xp.mean(m, axis=-1, keepdims=True)
    from arrayx.executors.jax.fused import Pending
    from arrayx.executors.jax.permuted import Permuted

    assert c._buf.__class__ in (Pending, Permuted)
    before = _routed()
    got = c @ xp.matrix_transpose(c)
    assert _routed() == before + 1
    _exact(got, lambda c: c @ xp.matrix_transpose(c), c)


@_on_jax
def test_no_warning_for_special_values(route):
    import warnings

    host = _data((ROWS, 64))
    host[0, 0], host[0, 1] = np.inf, 0.0  # inf * 0: NaN without NumPy's "invalid value" warning, as XLA
    x = xp.asarray(host)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = np.asarray(x.T @ x)
    assert np.isnan(got[0, 1])


@pytest.mark.parametrize("text, value", [("0", False), ("no", False), ("1", True), ("", True)])
def test_the_setting_is_read_with_a_default_of_on(monkeypatch, text, value):
    monkeypatch.setenv("ARRAYX_JAX_BLAS_MATMUL", text)
    assert config.get("ARRAYX_JAX_BLAS_MATMUL") is value


def test_a_bad_setting_names_the_variable(monkeypatch):
    monkeypatch.setenv("ARRAYX_JAX_BLAS_MATMUL", "sometimes")
    with pytest.raises(config.ConfigError, match="ARRAYX_JAX_BLAS_MATMUL"):
        config.get("ARRAYX_JAX_BLAS_MATMUL")
