"""Random numbers under jit and vmap are bit-identical to eager arrayx and to ``jax.random``.

Large draws (100,000 values, 20,000 on the dask executor; f32 and f64) so that a 1-2 ulp difference in a rare fraction of the
values shows: under ``arrayx.jit`` on the jax executor XLA:CPU compiles a sampler into one loop
and contracts ``c + a * b`` into fmas, which broke the error-free steps of the emulated fma,
erf^-1, log1p and log (34 of 100,000 normals, a fifth of float64 uniforms over [-2, 5)).  Those
operations are primitives whose jax impl is XLA's own (arrayx/_random_math.py), so every
combination below must give exactly the same bits.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx import _random_math
from conformance import profile
from tests import covering

jax = pytest.importorskip("jax")

@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield

jnp = jax.numpy


def _size(executor: str) -> int:
    # 100,000 where XLA contracted the steps (the jax executor), and on the host executors too, whose
    # draws of that size take milliseconds: the jax.random reference of each case is then one XLA
    # program for the three executors (another size compiles it again); Dask's chunked graphs 20,000
    return 20_000 if executor == "dask" else 100_000

FLOATS = (np.float32, np.float64)
SAMPLERS = {
    "normal": lambda r, k, dt, n: r.normal(k, (n,), dt),
    "uniform": lambda r, k, dt, n: r.uniform(k, (n,), dt),
    "uniform-span7": lambda r, k, dt, n: r.uniform(k, (n,), dt, -2.0, 5.0),
    "exponential": lambda r, k, dt, n: r.exponential(k, (n,), dt),
    "gumbel": lambda r, k, dt, n: r.gumbel(k, (n,), dt),
    "gumbel-high": lambda r, k, dt, n: r.gumbel(k, (n,), dt, mode="high"),
    "truncated_normal": lambda r, k, dt, n: r.truncated_normal(k, -1.5, 0.7, (n,), dt),
    "bernoulli": lambda r, k, dt, n: r.bernoulli(k, dt(0.3), (n,)),
    "categorical": lambda r, k, dt, n: r.categorical(k, (ax if r is ax.random else jnp).asarray(
        np.linspace(-1, 1, 7), dtype=dt), shape=(n // 10,)),
    "bits": lambda r, k, dt, n: r.bits(k, (n,), jnp.uint32 if dt == np.float32 else jnp.uint64),
    "randint": lambda r, k, dt, n: r.randint(k, (n,), -3, 1000),
}
#: off the jax executor these go through Cephes' erf, not XLA's: ~1e-16 apart (see _random_math.erf)
CEPHES_ERF = {"truncated_normal"}


def _check(name, executor, got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if name in CEPHES_ERF and executor != "jax":
        tol = 1e-6 if got.dtype == np.float32 else 1e-13  # the bounds a few ulp apart shift every value
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


#: the dask executor's jit runs each chunk through the numba (or numpy) kernels tested on those
#: executors with every sampler; what dask adds, the chunked graph around them, these cover (CI time)
DASK_SAMPLERS = {"normal", "uniform-span7", "bits", "categorical"}
DASK_COMPOSED = {"uniform-span7"}
#: (name, dtype) pairs: randint's draw does not take the float dtype, so it runs once
CASES = [(n, d) for n in sorted(SAMPLERS) for d in FLOATS if not (n == "randint" and d == np.float64)]


def _skip_on_dask(executor: str, name: str, subset: set) -> None:
    if executor == "dask" and name not in subset:
        pytest.skip(f"{name!r} on dask: same kernels as numba/numpy (covered there), graph covered by {sorted(subset)}")


def _id(v) -> str:
    return v if isinstance(v, str) else np.dtype(v).name


def _one_way_on_jax(executor: str, name: str, names) -> str | None:
    """On the jax executor in the ci profile: "eager" or "jit", two of ``names`` each in turn (so each
    dtype of the rotation meets both), where one XLA program per way and sampler is compiled; else
    None (both ways: the other executors, the deep profile)."""
    if executor != "jax" or not profile.current().sampled:
        return None
    return ("eager", "jit")[sorted(names).index(name) // 2 % 2]


_WANTS: dict = {}


def _jax_want(name, dtype, n):
    """jax.random's draw of a case with key 7, computed once for the executors' items that share it."""
    if (name, dtype, n) not in _WANTS:
        _WANTS[name, dtype, n] = np.asarray(SAMPLERS[name](jax.random, jax.random.PRNGKey(7), dtype, n))
    return _WANTS[name, dtype, n]


#: on the jax executor (new XLA programs per sampler and dtype) the ci profile takes each sampler in
#: one dtype, float32 and float64 in turn, eagerly or under jit (_one_way_on_jax); every pair both
#: ways in the deep profile (tests/covering.py)
@pytest.mark.parametrize("executor, name, dtype", covering.on_executors(CASES, ids=_id), indirect=["executor"])
def test_jit_eager_and_jax_random_agree_bit_for_bit(executor, name, dtype):
    _skip_on_dask(executor, name, DASK_SAMPLERS)
    draw = SAMPLERS[name]
    key = ax.random.key(7)
    n = _size(executor)
    want = _jax_want(name, dtype, n)
    way = _one_way_on_jax(executor, name, SAMPLERS)
    if way != "jit":
        eager = draw(ax.random, key, dtype, n)
        _check(name, executor, eager, want)
    if way != "eager":
        jitted = ax.jit(lambda k: draw(ax.random, k, dtype, n))(key)
        _check(name, executor, jitted, want)
        if way is None:
            np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))


COMPOSED = [(n, d) for n in ["normal", "uniform-span7", "exponential", "truncated_normal", "gumbel-high"]
            for d in FLOATS]


@pytest.mark.parametrize("executor, name, dtype", covering.on_executors(
    COMPOSED, ids=lambda v: v if isinstance(v, str) else {np.float32: "f32", np.float64: "f64"}[v]),
    indirect=["executor"])
def test_vmap_and_jit_compose_bit_for_bit(executor, name, dtype):
    _skip_on_dask(executor, name, DASK_COMPOSED)
    draw = SAMPLERS[name]
    keys = ax.random.split(ax.random.key(3), 3)
    n = _size(executor) // 10  # per key
    if ("vmap", name, dtype, n) not in _WANTS:  # once for the executors' items of a case
        _WANTS["vmap", name, dtype, n] = np.asarray(
            jax.vmap(lambda k: draw(jax.random, k, dtype, n))(jax.random.split(jax.random.PRNGKey(3), 3)))
    want = _WANTS["vmap", name, dtype, n]
    one = lambda k: draw(ax.random, k, dtype, n)  # noqa: E731
    eager = ax.vmap(one)(keys)
    np.testing.assert_array_equal(np.asarray(eager), np.stack([np.asarray(one(keys[i])) for i in range(3)]))
    for composed in (ax.jit(ax.vmap(one)), ax.vmap(ax.jit(one))):
        np.testing.assert_array_equal(np.asarray(composed(keys)), np.asarray(eager))
    _check(name, executor, eager, want)


def test_the_jax_executor_runs_xlas_own_operations():
    # the staged graph holds XLA's operations (erf^-1, the fma) rather than their emulation
    with ax.use_executor("jax"):
        graph = ax.make_graph(lambda k: ax.random.uniform(k, (5,), ax.float64, -2.0, 5.0))(ax.random.key(0))
        names = {e.prim.name for e in graph.equations}
        assert "xla_fma" in names and "nextafter" not in names
        graph = ax.make_graph(lambda k: ax.random.normal(k, (5,)))(ax.random.key(0))
        assert "xla_erf_inv" in {e.prim.name for e in graph.equations}
    graph = ax.make_graph(lambda k: ax.random.normal(k, (5,)))(ax.random.key(0))  # numpy: the emulation
    assert not {e.prim.name for e in graph.equations} & set(f"xla_{n}" for n in _random_math.XLA_OPS)


_JAX_FMA = jax.jit(lambda a, b, c: a * b + c)  # one jitted reference: compiled once per dtype, not per test


@pytest.mark.parametrize("op", ["fma", "log1p", "log", "erf", "erf_inv"])
def test_xla_operations_on_every_executor_match_xla(executor, op):
    # the emulation (numpy, numba, dask) and XLA's own (jax) give XLA's bits, eagerly and under jit
    rng = np.random.default_rng(5)
    for dtype in FLOATS:
        x = rng.uniform(0.01, 0.99, 4000).astype(dtype)
        args = (x, rng.uniform(-3, 3, 4000).astype(dtype), rng.uniform(-3, 3, 4000).astype(dtype))
        fn = getattr(_random_math, op)
        if op == "fma":
            want = _JAX_FMA(*args)
            got, staged = fn(*map(ax.asarray, args)), ax.jit(fn)(*map(ax.asarray, args))
        else:
            want = jax.jit(getattr(jax.lax, op))(x)
            got, staged = fn(ax.asarray(x)), ax.jit(fn)(ax.asarray(x))
        np.testing.assert_array_equal(np.asarray(staged), np.asarray(got))
        if op == "erf" and executor != "jax":
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6 if dtype == np.float32 else 1e-15)
        else:
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_grad_through_xla_operations_on_jax():
    # the primitives' jvp rules: d erf^-1, d erf, d log1p, d log, and the fma's three operands
    x = np.array([0.1, 0.45, -0.7])
    with ax.use_executor("jax"):
        for op, jop in [("erf_inv", jax.lax.erf_inv), ("erf", jax.lax.erf), ("log1p", jnp.log1p)]:
            g = ax.grad(lambda v: ax.sum(getattr(_random_math, op)(v)))(ax.asarray(x))
            np.testing.assert_allclose(np.asarray(g), np.asarray(jax.grad(lambda v: jnp.sum(jop(v)))(x)), rtol=1e-12)
        g = ax.grad(lambda v: ax.sum(_random_math.log(v)))(ax.asarray(np.abs(x)))
        np.testing.assert_allclose(np.asarray(g), 1 / np.abs(x), rtol=1e-14)
        gs = ax.grad(lambda a, b, c: ax.sum(_random_math.fma(a, b, c)), argnums=(0, 1, 2))(
            *(ax.asarray(v) for v in (x, 2 * x, 3 * x)))
        for g, w in zip(gs, (2 * x, x, np.ones(3))):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-15)
