"""The jax executor's NumPy-semantics corrections (executors/jax/numpy_rules.py), per platform.

On every platform arrayx gives NumPy's values at the edges the corrections guard (sums of -0
terms, NaN in max/min, fmod by an infinity).  Where ``NOT_NEEDED`` says a platform's plain
``jax.numpy`` gives those values already, the compiled program for that platform holds no
correction (checked here by lowering for "tpu" on any machine); the chip's tests measure that
the raw results there are NumPy's, which is what lets the table leave the correction out.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrayx as ax
from tests.executors.platform_tolerances import tpu_device
from arrayx.core import executor as base

pytestmark = [pytest.mark.jax, pytest.mark.skipif(not base.get("jax").available(), reason="jax is not installed")]


TPU = tpu_device()
on_chip = pytest.mark.skipif(TPU is None, reason="no TPU here (the jax executor lists no tpu device)")


def _devices():
    ex = base.get("jax")
    return [d for d in ex.devices() if ex.platform_of(d) in ("cpu", "tpu")] if ex.available() else []


def _edge_cases():
    """(name, function, host inputs) whose NumPy values the corrections guard; float32 (every device)."""
    f = np.float32
    neg0 = np.full((3, 5), -0.0, f)
    nan_long = np.ones((3, 2048), f)
    nan_long[1, 7] = np.nan
    nan_long[2, 2047] = np.nan
    a = np.array([-0.0, 0.0, -3.0, 5.5, np.inf, -np.inf, 7.0, np.nan, -2.0, 7.5, -7.5, 3.0, 4.0], f)
    b = np.array([2.0, -2.0, -np.inf, 0.0, 2.0, 3.0, -0.0, 1.0, np.inf, -2.0, 2.5, -1.5, 0.0], f)
    return [
        ("sum of -0", lambda xp, x: xp.sum(x, axis=1), (neg0,)),
        ("sum of -0, all", lambda xp, x: xp.sum(x), (neg0,)),
        ("mean of -0", lambda xp, x: xp.mean(x, axis=0), (neg0,)),
        ("matmul of -0 products", lambda xp, x, y: xp.matmul(x, y), (neg0, np.ones((5, 4), f))),
        ("tensordot of -0 products", lambda xp, x, y: xp.tensordot(x, y, axes=1), (neg0, np.ones((5, 2), f))),
        ("vecdot of -0 products", lambda xp, x, y: xp.vecdot(x, y), (neg0, np.ones((3, 5), f))),
        ("max with NaN, 3x2048", lambda xp, x: xp.max(x, axis=1), (nan_long,)),
        ("min with NaN, 3x2048", lambda xp, x: xp.min(x, axis=1), (nan_long,)),
        ("max with NaN, all", lambda xp, x: xp.max(x), (nan_long,)),
        ("floor_divide at the edges", lambda xp, x, y: xp.floor_divide(x, y), (a, b)),
        ("remainder at the edges", lambda xp, x, y: xp.remainder(x, y), (a, b)),
        ("expm1 of signed zeros", lambda xp, x: xp.expm1(x), (np.array([-0.0, 0.0, np.inf, -np.inf], f),)),
        ("sinh of signed zeros", lambda xp, x: xp.sinh(x), (np.array([-0.0, 0.0, np.inf, -np.inf], f),)),
        ("round of integral floats", lambda xp, x: xp.round(x),
         (np.array([355269951488.0, -2.0**30, 2.0**23 + 1, 2.5, -3.5, 0.49999997], f),)),
    ]


def _assert_bits(got, want, name):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, name
    np.testing.assert_array_equal(got, want, err_msg=name)
    numbers = ~np.isnan(want)  # a NaN's sign bit is not a value (XLA:TPU and NumPy set it differently)
    assert (np.signbit(got[numbers]) == np.signbit(want[numbers])).all(), f"{name}: signs of zero differ: {got} vs {want}"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's own divide-by-zero warnings
@pytest.mark.parametrize("device", _devices(), ids=str)
@pytest.mark.parametrize("case", _edge_cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_edge_values_are_numpys_on_every_jax_device(case, device, compiled):
    name, fn, host = case
    want = fn(ax, *[ax.asarray(h, device="numpy") for h in host])
    args = [ax.asarray(h, device=device) for h in host]
    run = ax.jit(lambda *a: fn(ax, *a)) if compiled else (lambda *a: fn(ax, *a))
    _assert_bits(run(*args), want, f"{name} on {device}")


@pytest.mark.parametrize("name", ["expm1", "sinh"])
def test_only_a_tpu_program_holds_the_corrections_only_the_tpu_needs(name):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from arrayx.executors.jax import numpy_rules

    base.get("jax").available()  # loads JAX into the executor
    impl = base.get("jax").overrides[name]
    program = jax.jit(lambda x: impl(x))
    x = jnp.ones(4, jnp.float32)
    for platform, corrected in (("cpu", False), ("tpu", True)):
        text = program.trace(x).lower(lowering_platforms=(platform,)).as_text()
        assert ("select" in text) is corrected, (name, platform)
    assert set(numpy_rules.ONLY_ON) == {"signed_zero", "power_of_two_scaled"}


@pytest.mark.parametrize("name", ["svd", "svdvals"])
def test_only_a_tpu_program_scales_the_svd_operand(name):
    """XLA:TPU's svd does not scale its operand as LAPACK does (NaN singular values for entries near
    1e19): a TPU program scales each matrix by powers of two (``frexp``'s and ``ldexp``'s bit
    operations), a CPU program holds ``jax.numpy``'s svd alone."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    base.get("jax").available()  # loads JAX into the executor
    impl = base.get("jax").overrides[name]
    x = jnp.ones((2, 4, 3), jnp.float32)

    def count(fn, platform):
        return jax.jit(fn).trace(x).lower(lowering_platforms=(platform,)).as_text().count("bitcast_convert")

    assert count(impl, "cpu") == count(impl.raw, "cpu") == 0
    assert count(impl, "tpu") > count(impl.raw, "tpu")


@pytest.mark.parametrize("name", ["matmul", "sum", "max"])
def test_a_tpu_program_holds_no_correction_the_table_says_it_does_not_need(name):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from arrayx.executors.jax import numpy_rules

    base.get("jax").available()  # loads JAX into the executor
    impl = base.get("jax").overrides[name]
    x = jnp.ones((4, 4), jnp.float32)
    args = (x, x) if name == "matmul" else (x,)
    program = jax.jit(lambda *a: impl(*a))
    for platform, corrected in (("cpu", True), ("tpu", False)):
        text = program.trace(*args).lower(lowering_platforms=(platform,)).as_text()
        assert ("select" in text) is corrected, (name, platform)
    assert set(numpy_rules.NOT_NEEDED) == {"sum_from_plus_zero", "nan_propagating"}


@on_chip
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("case", [c for c in _edge_cases() if c[0].split()[0] in ("sum", "mean", "matmul", "tensordot",
                                                                                   "vecdot", "max", "min")],
                         ids=lambda c: c[0])
def test_on_the_chip_plain_jax_numpy_gives_numpys_values_where_the_table_says_so(case):
    """The measurement behind ``NOT_NEEDED``: XLA:TPU's own results, with no correction, are NumPy's."""
    import jax
    import jax.numpy as jnp

    name, fn, host = case
    want = fn(np, *host)
    native = TPU.native
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = jax.jit(lambda *a: fn(jnp, *a))(*[jax.device_put(h, native) for h in host])
    _assert_bits(got, want, f"plain jax.numpy {name} on the chip")
