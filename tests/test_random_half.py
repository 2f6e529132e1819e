"""arrayx.random in float16 and bfloat16: the same bits as ``jax.random`` on every executor, eagerly and under jit.

What XLA:CPU does with 16-bit floats (measured; arrayx/_random_math.py says how it is followed):
JAX draws 16 random bits per float16 value and 8 per bfloat16 value; 16-bit arithmetic is
rounded after each operation (no fused multiply-add); log, log1p, erf and erf^-1 are the float32
routines between two conversions; bfloat16 (float32's exponent range) reads and writes subnormals
as zero (XLA:CPU runs with flush-to-zero; the same with ``XLA_FLAGS=--xla_cpu_max_isa=AVX2``, so it
is not the AVX512-BF16 conversion instruction).  The elementary functions are checked on every 16-bit value, the samplers on small draws.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import arrayx as ax
from arrayx import _random_math
from conformance import profile
from tests import covering

jax = pytest.importorskip("jax")
ml_dtypes = pytest.importorskip("ml_dtypes")
jnp = jax.numpy


@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the reference, in 64 bits (tests/conftest.py)
    yield


HALVES = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
HALF_IDS = ["f16", "bf16"]
N = 600  # values per draw: cheap, and (with the exhaustive checks below) enough to see a rounding rule


def _lib(r):
    return ax if r is ax.random else jnp


SAMPLERS = {
    "uniform": lambda r, k, dt: r.uniform(k, (N,), dt),
    "uniform-bounds": lambda r, k, dt: r.uniform(k, (3, N // 3), dt, -1.7, 3.3),
    "uniform-small-span": lambda r, k, dt: r.uniform(k, (N,), dt, 1e-3, 7e-3),
    "uniform-array-bounds": lambda r, k, dt: r.uniform(
        k, (4, N // 4), dt, _lib(r).asarray(np.linspace(-3, 1, 4).reshape(4, 1), dtype=dt), 2.5),
    "normal": lambda r, k, dt: r.normal(k, (N,), dt),
    "exponential": lambda r, k, dt: r.exponential(k, (N,), dt),
    "gumbel": lambda r, k, dt: r.gumbel(k, (N,), dt),
    "gumbel-high": lambda r, k, dt: r.gumbel(k, (N,), dt, mode="high"),
    "gumbel-highest": lambda r, k, dt: r.gumbel(k, (N,), dt, mode="highest"),
    "truncated_normal": lambda r, k, dt: r.truncated_normal(k, -1.3, 2.1, (N,), dt),
    "truncated_normal-tail": lambda r, k, dt: r.truncated_normal(k, 1.5, 6.0, (N,), dt),
    "truncated_normal-array-bounds": lambda r, k, dt: r.truncated_normal(
        k, _lib(r).asarray([-2.0, 0.25, 0.05017], dtype=dt), 1.0, (N // 3, 3), dt),
    "bernoulli": lambda r, k, dt: r.bernoulli(k, dt.type(0.3), (N,)),
    "bernoulli-array": lambda r, k, dt: r.bernoulli(k, _lib(r).asarray(np.linspace(0, 1, N), dtype=dt)),
    "bernoulli-high": lambda r, k, dt: r.bernoulli(k, _lib(r).asarray(np.full(N, 1e-3), dtype=dt), mode="high"),
    # (N values of noise where a draw's size is free: the jax executor's eager programs of one size;
    # six logits and six p: the two draws without replacement share theirs)
    "categorical": lambda r, k, dt: r.categorical(k, _lib(r).asarray(np.linspace(-1, 1, 6), dtype=dt), shape=(N // 6,)),
    "categorical-no-replace": lambda r, k, dt: r.categorical(
        k, _lib(r).asarray(np.linspace(-1, 1, 6), dtype=dt), shape=(5,), replace=False),
    "choice-p": lambda r, k, dt: r.choice(k, 4, (N,), p=_lib(r).asarray([0.1, 0.2, 0.3, 0.4], dtype=dt)),
    "choice-p-no-replace": lambda r, k, dt: r.choice(
        k, 6, (4,), replace=False, p=_lib(r).asarray([0.1, 0.3, 0.05, 0.15, 0.2, 0.2], dtype=dt)),
}


def _same_bits(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if got.dtype.itemsize == 2 and got.dtype.kind != "i":
        got, want = got.view(np.uint16), want.view(np.uint16)
    mismatched = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert mismatched.size == 0, f"{mismatched.size} of {got.size} values differ, first at {mismatched[:5]}"


def _indices(x):  # JAX returns some index arrays as int32, arrayx as its default int64
    x = np.asarray(x)
    return x.astype(np.int64) if x.dtype.kind == "i" else x


def _half_id(v) -> str:
    return HALF_IDS[HALVES.index(v)] if isinstance(v, np.dtype) else str(v)


#: every sampler in both dtypes on every executor; on the jax executor (new XLA programs per sampler
#: and dtype) the ci profile takes each sampler in one dtype, f16 and bf16 in turn (tests/covering.py),
#: and checks it eagerly or under jit, two samplers each in turn (_EAGER_ON_JAX: so each 16-bit dtype
#: meets both there); every sampler both ways on the other executors and in the deep profile
_EAGER_ON_JAX = {n: i // 2 % 2 == 0 for i, n in enumerate(sorted(SAMPLERS))}


#: jax.random's draw of each (sampler, dtype), shared by the executors' items
_WANTS: dict = {}


def _jax_want(name, dtype, seed):
    """``SAMPLERS[name]`` by jax.random, as one jitted program (the same bits as the eager call, whose
    operations outside jax.random's own jit programs, e.g. choice's cumulative sum, each compile one),
    computed once per case for every executor's item."""
    case = (name, dtype, seed)
    if case not in _WANTS:
        _WANTS[case] = _indices(jax.jit(lambda k: SAMPLERS[name](jax.random, k, dtype))(jax.random.PRNGKey(seed)))
    return _WANTS[case]


@pytest.mark.parametrize("executor, name, dtype", covering.on_executors(
    [(n, d) for n in sorted(SAMPLERS) for d in HALVES], ids=_half_id), indirect=["executor"])
def test_half_draws_match_jax_eagerly_and_under_jit(executor, name, dtype):
    draw = SAMPLERS[name]
    seed = 2**40 + 3  # both key words non-zero
    want = _jax_want(name, dtype, seed)
    key = ax.random.key(seed)
    both = executor != "jax" or not profile.current().sampled
    if both or _EAGER_ON_JAX[name]:
        _same_bits(_indices(draw(ax.random, key, dtype)), want)
    if both or not _EAGER_ON_JAX[name]:
        _same_bits(_indices(ax.jit(lambda k: draw(ax.random, k, dtype))(key)), want)


def _turns(executor, dtype, items: list) -> list:
    """``items`` in full, except on the jax executor in the ci profile (new XLA programs per draw and
    dtype there): every other one, f16 and bf16 taking them in turn, so each runs in one 16-bit dtype
    there (tests/covering.py's rule; every item in both dtypes in the deep profile)."""
    if executor != "jax" or not profile.current().sampled:
        return list(items)
    return [item for i, item in enumerate(items) if HALVES[i % len(HALVES)] == dtype]


@pytest.mark.parametrize("dtype", HALVES, ids=HALF_IDS)
def test_half_draws_under_vmap_match_jax(executor, dtype):
    # N // 3 per key: the three keys' N values share the eager hash programs of the draws above
    draws = [lambda r, k: r.normal(k, (N // 3,), dtype), lambda r, k: r.truncated_normal(k, -0.5, 1.5, (N // 3,), dtype)]
    for draw in _turns(executor, dtype, draws):
        want = jax.vmap(lambda k: draw(jax.random, k))(jax.random.split(jax.random.PRNGKey(3), 3))
        _same_bits(ax.vmap(lambda k: draw(ax.random, k))(ax.random.split(ax.random.key(3), 3)), want)


@pytest.mark.parametrize("dtype", HALVES, ids=HALF_IDS)
@pytest.mark.parametrize("name", ["uniform-bounds", "normal", "exponential", "gumbel", "bernoulli"])
def test_half_draws_match_jax_in_the_original_layout(name, dtype):
    # threefry_partitionable(False): bfloat16's bytes are the bytes of each hashed word, as in JAX
    draw = SAMPLERS[name]
    with jax.threefry_partitionable(False), ax.random.threefry_partitionable(False):
        _same_bits(draw(ax.random, ax.random.key(5), dtype), draw(jax.random, jax.random.PRNGKey(5), dtype))


def _every(dtype, keep) -> np.ndarray:
    values = np.arange(2**16, dtype=np.uint16).view(dtype)
    wide = values.astype(np.float32)
    return values[np.isfinite(wide) & keep(wide)]


OPS = {
    "log1p": (jax.lax.log1p, lambda x: x > -1),
    "log": (jax.lax.log, lambda x: x > 0),
    "erf_inv": (jax.lax.erf_inv, lambda x: np.abs(x) <= 1),
    "erf": (jax.lax.erf, lambda x: np.abs(x) < np.inf),
}


@pytest.mark.parametrize("executor, op, dtype", covering.on_executors(
    [(o, d) for o in sorted(OPS) for d in HALVES], ids=_half_id), indirect=["executor"])
def test_half_math_matches_xla_on_every_value(executor, op, dtype):
    # every 16-bit operand in the domain, subnormals included (read as zero for bfloat16)
    jfn, keep = OPS[op]
    x = _every(dtype, keep)
    want = jax.jit(jfn)(jnp.asarray(x))
    _same_bits(getattr(_random_math, op)(ax.asarray(x)), want)


_JAX_FMA = jax.jit(lambda a, b, c: a * b + c)  # one jitted reference: compiled once per dtype, not per test


@pytest.mark.parametrize("dtype", HALVES, ids=HALF_IDS)
def test_half_arithmetic_rounds_each_operation_as_xla_does(executor, dtype):
    # fma in 16 bits is a product and a sum, each rounded (XLA:CPU fuses no 16-bit multiply-add)
    rng = np.random.default_rng(3)
    a, b, c = (rng.uniform(-4, 4, 2000).astype(dtype) for _ in range(3))
    want = _JAX_FMA(a, b, c)
    _same_bits(_random_math.fma(*map(ax.asarray, (a, b, c))), want)
    _same_bits(ax.jit(_random_math.fma)(*map(ax.asarray, (a, b, c))), want)


@pytest.mark.parametrize("dtype", HALVES, ids=HALF_IDS)
def test_subnormal_bounds_and_probabilities_match_jax(executor, dtype):
    # XLA:CPU's bfloat16 arithmetic reads and writes subnormals as zero (bounds, spans, p, the clip of
    # truncated_normal); float16 subnormals are float32 normals there, kept
    # N values per draw, the size of the draws above: on the jax executor they share its eager programs
    tiny = float(np.finfo(dtype).tiny)
    cases = {
        "uniform": [lambda r, k, lo=lo, hi=hi: r.uniform(k, (N,), dtype, lo, hi)
                    for lo, hi in [(0.0, 3 * tiny), (tiny / 4, 1.0), (-tiny / 8, tiny / 2), (0.5 * tiny, 8 * tiny)]],
        "bernoulli": [lambda r, k: r.bernoulli(
            k, _lib(r).asarray(np.tile(np.array([0.0, tiny / 4, tiny, 1e-3], dtype), N // 4)))],
        "truncated_normal": [lambda r, k: r.truncated_normal(k, tiny / 4, 2 * tiny, (N,), dtype)],
    }
    key, jkey = ax.random.key(1), jax.random.PRNGKey(1)
    draws = _turns(executor, dtype, [draw for group in cases.values() for draw in group])
    wants = [draw(jax.random, jkey) for draw in draws]
    staged = ax.jit(lambda k: [draw(ax.random, k) for draw in draws])(key)  # one program for all the draws
    for draw, want, got in zip(draws, wants, staged):
        _same_bits(draw(ax.random, key), want)
        _same_bits(got, want)


@pytest.mark.parametrize("dtype", HALVES, ids=HALF_IDS)
def test_half_draws_have_the_requested_dtype_and_range(dtype):
    k = ax.random.key(0)
    u = np.asarray(ax.random.uniform(k, (2000,), dtype), np.float32)
    assert ax.random.uniform(k, (3,), dtype).dtype == dtype
    assert u.min() >= 0 and u.max() < 1 and len(np.unique(u)) > 100
    t = np.asarray(ax.random.truncated_normal(k, -0.5, 0.5, (500,), dtype), np.float32)
    assert t.min() > -0.5 and t.max() < 0.5
    assert abs(float(np.asarray(ax.random.normal(k, (4000,), dtype), np.float32).mean())) < 0.1
    assert math.isclose(float(np.asarray(ax.random.exponential(k, (4000,), dtype), np.float32).mean()), 1.0, abs_tol=0.1)
