"""jit on Numba: arrayx.random's exact fma emulations become one hardware fma (_numba_contract),
with jax.random's bits; nothing is contracted that is not exactly the emulation, nor without FMA."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import arrayx as xp
from arrayx import _random_math
from arrayx import random as xr
from arrayx.core import executor as base

NUMBA = base.get("numba")
pytestmark = pytest.mark.skipif(not NUMBA.available(), reason=f"executor 'numba' unavailable: {NUMBA.unavailable_reason}")

if NUMBA.available():
    from arrayx.executors.numba.fusion import contract as C
    from arrayx.transforms.staging import make_graph

needs_fma = pytest.mark.skipif(NUMBA.available() and not C.hardware_fma(),
                               reason="this CPU has no FMA: the emulation is kept (tested below)")

try:
    import jax
    import jax.random as jr
except ImportError:  # pragma: no cover
    jax = jr = None


@pytest.fixture(autouse=True)
def on_numba():
    with xp.use_executor("numba"):
        yield


def _graph(fn, *args):
    g = make_graph(fn)(*args)
    return g if hasattr(g, "equations") else g[0]


def _names(graph) -> list:
    return [e.prim.name for e in graph.equations]


def _fma_halves(a, b, c):
    return _random_math._fma_halves(a, b, _random_math._split_halves(b), c)


def _exact_fma(a, b, c) -> np.ndarray:
    return np.array([float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a, b, c)])


ABC = [np.random.default_rng(s).standard_normal(500) * 10.0 ** np.random.default_rng(s + 9).integers(-8, 8, 500)
       for s in range(3)]


@needs_fma
@pytest.mark.parametrize("small", [False, True])
def test_an_emulated_fma_is_one_equation(small):
    a, b, c = (xp.asarray(v) for v in ABC)
    fn = lambda a, b, c: _random_math._fma_halves(a, b, _random_math._split_halves(b), c, small)  # noqa: E731
    graph = _graph(fn, a, b, c)
    assert len(graph.equations) > 15
    contracted = C.contract_fmas(graph)
    assert _names(contracted) == ["numba_fma"]
    assert contracted.equations[0].inputs == tuple(graph.inputs)
    if not small:  # (the fast two-sum is exact only where |a * b| <= |c|: not for these values)
        np.testing.assert_array_equal(np.asarray(xp.jit(fn)(a, b, c)), _exact_fma(*ABC))


@needs_fma
def test_a_python_float_coefficient_is_matched_by_its_halves():
    b, c = xp.asarray(ABC[1]), xp.asarray(ABC[2])
    graph = _graph(lambda b, c: _fma_halves(0.24015818242558961693, b, c), b, c)
    (eqn,) = C.contract_fmas(graph).equations
    assert eqn.prim.name == "numba_fma" and float(eqn.inputs[0].value) == 0.24015818242558961693


@pytest.mark.parametrize("change", ["split constant", "other product", "float32", "rounding"])
def test_what_is_not_exactly_the_emulation_is_kept(change):
    a, b, c = (xp.asarray(v) for v in ABC)

    def near_miss(a, b, c):
        if change == "float32":
            a, b, c = (xp.astype(v, xp.float32) for v in (a, b, c))
        product = a * b
        t = a * (134217728.0 if change == "split constant" else 134217729.0)
        ah = t - (t - a)
        al = a - ah
        bh, bl = _random_math._split_halves(b)
        error = (((ah * bh - product) + ah * bl) + al * bh) + al * bl
        total = (a * c if change == "other product" else product) + c
        bv = total - product
        rounding = (product - (total - bv)) + ((c - bv) if change != "rounding" else (bv - c))
        return total + (rounding + error)

    graph = _graph(near_miss, a, b, c)
    assert "numba_fma" not in _names(C.contract_fmas(graph))


def test_without_fma_nothing_is_contracted(monkeypatch):
    graph = _graph(_fma_halves, *(xp.asarray(v) for v in ABC))
    monkeypatch.setattr(C, "hardware_fma", lambda: False)
    assert C.contract_fmas(graph) is graph
    k = xr.key(3)
    got = xp.jit(lambda k: xr.normal(k, (5000,), dtype=xp.float64))(k)  # the emulation, in the kernels
    with xp.use_executor("numpy"):
        want = xr.normal(xr.key(3), (5000,), dtype=xp.float64)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_the_switch_and_the_named_cpu(monkeypatch):
    from numba.core import config

    C.hardware_fma.cache_clear()
    try:
        monkeypatch.setenv("ARRAYX_NUMBA_FMA", "0")
        assert C.hardware_fma() is False
        C.hardware_fma.cache_clear()
        monkeypatch.delenv("ARRAYX_NUMBA_FMA")
        monkeypatch.setattr(config, "CPU_NAME", "x86-64")  # a portable target without FMA
        monkeypatch.setattr(config, "CPU_FEATURES", "+sse2,+avx")
        assert C.hardware_fma() is False
        C.hardware_fma.cache_clear()
        monkeypatch.setattr(config, "CPU_FEATURES", "+avx2,+fma")
        assert C.hardware_fma() is True
    finally:
        C.hardware_fma.cache_clear()


@needs_fma
def test_random_normal_under_jit_uses_hardware_fmas():
    from tests.executors.test_fusion import _compiled

    jf = xp.jit(lambda k: xr.normal(k, (20_000,), dtype=xp.float64))
    k = xr.key(0)
    jf(k)
    sources = [r.source for r in _compiled(jf, k).regions]
    assert sum(s.count("nm.fma(") for s in sources) >= 23  # erf^-1's chain; log1p's two rationals
    assert all("134217729" not in s for s in sources)


@pytest.mark.skipif(jr is None, reason="jax is not installed: jax.random is the bit-exact reference")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1000, 200_000])  # below the fusion threshold (fma outside kernels) and above
def test_jit_samplers_on_numba_are_jax_random_bit_for_bit(dtype, n):
    samplers = {
        "normal": (lambda k: xr.normal(k, (n,), dtype=getattr(xp, dtype)),
                   lambda k: jr.normal(k, (n,), dtype=dtype)),
        "uniform": (lambda k: xr.uniform(k, (n,), dtype=getattr(xp, dtype), minval=-2.0, maxval=3.0),
                    lambda k: jr.uniform(k, (n,), dtype=dtype, minval=-2.0, maxval=3.0)),
        "exponential": (lambda k: xr.exponential(k, (n,), dtype=getattr(xp, dtype)),
                        lambda k: jr.exponential(k, (n,), dtype=dtype)),
    }
    with jax.enable_x64(True), jax.threefry_partitionable(True):
        for name, (ours, theirs) in samplers.items():
            got = np.asarray(xp.jit(ours)(xr.key(11)))
            want = np.asarray(jax.jit(theirs)(jr.PRNGKey(11)))
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"), err_msg=name)
