"""arrayx.random's eager Numba kernels (arrayx/executors/numba/random_kernels.py): the same bits as
the arrayx operations (and so as jax.random), and eager draws that do not run those operations.

Speed is measured in benchmarks/bench_random.py, not here.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx import _random_math, _threefry
from arrayx import random as xr

numba = pytest.importorskip("numba", reason="the eager random kernels are Numba kernels")

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - depends on the environment
    jax = jnp = None

needs_jax = pytest.mark.skipif(jax is None, reason="jax is not installed: jax.random is the bit-exact reference")
HOST_EXECUTORS = ("numpy", "numba")
FLOATS = [xp.float32, xp.float64]


def same(actual, expected) -> None:
    """Identical dtype, shape and bits."""
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, a.shape, e.dtype, e.shape)
    if a.dtype.kind == "c":  # the real and imaginary parts' bits
        a, e = np.stack([a.real, a.imag]), np.stack([e.real, e.imag])
    if a.dtype.kind == "f":  # compare bit patterns (-0.0 vs 0.0, NaN payloads)
        a, e = a.view(f"u{a.dtype.itemsize}"), e.view(f"u{e.dtype.itemsize}")
    np.testing.assert_array_equal(a, e)


@pytest.fixture(params=HOST_EXECUTORS)
def executor(request) -> str:
    """The executors with eager random kernels (conftest's ``executor``, narrowed to them)."""
    from arrayx.core import executor as base

    ex = base.get(request.param)
    if not ex.available():
        pytest.skip(f"executor {request.param!r} unavailable: {ex.unavailable_reason}")
    with xp.use_executor(request.param):
        yield request.param


#: draws of every sampler, float ones in both dtypes (dt); each routes through a kernel eagerly
DRAWS = {
    "uniform": lambda k, s, dt: xr.uniform(k, s, dt),
    "uniform-bounds": lambda k, s, dt: xr.uniform(k, s, dt, minval=-1.5, maxval=2.25),  # an fma
    "uniform-pow2": lambda k, s, dt: xr.uniform(k, s, dt, minval=3.0, maxval=7.0),  # an exact product
    "uniform-0d-bounds": lambda k, s, dt: xr.uniform(k, s, dt, minval=xp.asarray(-0.1, dtype=dt),
                                                     maxval=xp.asarray(0.3, dtype=dt)),
    "uniform-array-bounds": lambda k, s, dt: xr.uniform(k, s, dt, minval=xp.full(s, -2.0, dtype=dt),
                                                        maxval=xp.full(s, 0.7, dtype=dt)),
    "normal": lambda k, s, dt: xr.normal(k, s, dt),
    "normal-complex": lambda k, s, dt: xr.normal(k, s, xp.complex64 if dt == xp.float32 else xp.complex128),
    "exponential": lambda k, s, dt: xr.exponential(k, s, dt),
    "gumbel": lambda k, s, dt: xr.gumbel(k, s, dt),
    "gumbel-high": lambda k, s, dt: xr.gumbel(k, s, dt, mode="high"),
    "truncated_normal": lambda k, s, dt: xr.truncated_normal(k, -1.5, 2.0, s, dt),
    "truncated_normal-array": lambda k, s, dt: xr.truncated_normal(k, xp.full(s, -0.5, dtype=dt), 1.0, s, dt),
    "truncated_normal-inf": lambda k, s, dt: xr.truncated_normal(k, -np.inf, 0.5, s, dt),
    "bernoulli": lambda k, s, dt: xr.bernoulli(k, dt.type(0.3), s),
    "bernoulli-array": lambda k, s, dt: xr.bernoulli(k, xp.full(s, 0.7, dtype=dt), s),
    "bernoulli-high": lambda k, s, dt: xr.bernoulli(k, dt.type(0.3), s, mode="high"),
    "bits8": lambda k, s, dt: xr.bits(k, s, xp.uint8),
    "bits16": lambda k, s, dt: xr.bits(k, s, xp.uint16),
    "bits32": lambda k, s, dt: xr.bits(k, s, xp.uint32),
    "bits64": lambda k, s, dt: xr.bits(k, s, xp.uint64),
    "split": lambda k, s, dt: xr.split(k, s if len(s) != 1 else s[0]),
    "randint8": lambda k, s, dt: xr.randint(k, s, -5, 100, xp.int8),
    "randint32": lambda k, s, dt: xr.randint(k, s, -7, 1000, xp.int32),
    "randint32-wide": lambda k, s, dt: xr.randint(k, s, -2**31, 2**31 - 5, xp.int32),  # quotients near 2**32
    "randint64": lambda k, s, dt: xr.randint(k, s, -2**40, 2**62 + 3, xp.int64),
    "randint-u64": lambda k, s, dt: xr.randint(k, s, 3, 2**63 - 1, xp.uint64),
    "randint-u32-full": lambda k, s, dt: xr.randint(k, s, 0, 2**32, xp.uint32),  # maxval past the dtype
}
#: shapes: empty, 0-d, n-d, and more than one eager slice of the arrayx operations (_threefry._CHUNK)
SHAPES = [(0,), (), (3, 5), (_threefry._CHUNK + 7,)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_kernels_give_the_bits_of_the_arrayx_operations(executor, monkeypatch, name, dtype):
    key = xr.key(2**40 + 3)
    for shape in SHAPES:
        got = DRAWS[name](key, shape, dtype)
        with monkeypatch.context() as m:
            m.setattr(xr, "KERNELS", False)
            want = DRAWS[name](key, shape, dtype)
        assert got.device == want.device
        same(got, want)


#: every sampler, and permutation (sorting by random bits)
EAGER = {**DRAWS, "permutation": lambda k, s, dt: xr.permutation(k, s[0])}


@pytest.mark.parametrize("name", sorted(EAGER))
def test_eager_draws_hash_no_counters_with_arrayx_operations(executor, monkeypatch, name):
    # before the kernels, an eager draw hashed all its counters with ~110 whole-array operations
    hashed = []

    def counting(k1, k2, x1, x2):
        hashed.append(int(np.prod(np.shape(x2))))
        return threefry(k1, k2, x1, x2)

    threefry = _threefry.threefry2x32
    key = xr.key(5)
    monkeypatch.setattr(_threefry, "threefry2x32", counting)
    for dtype in FLOATS:
        EAGER[name](key, (4000,), dtype)
    assert hashed == [], hashed


def test_transforms_keep_their_rules():
    # under a transform the draw is staged as arrayx operations, as before
    graph = xp.make_graph(lambda k: xr.normal(k, (8,), xp.float32))(xr.key(0))
    names = {eq.prim.name for eq in graph.equations}
    assert "shift_left" in names or "bitwise_xor" in names, sorted(names)
    same(xp.jit(lambda k: xr.normal(k, (70001,), xp.float64))(xr.key(3)), xr.normal(xr.key(3), (70001,), xp.float64))
    same(xp.vmap(lambda k: xr.exponential(k, (300,), xp.float32))(xr.split(xr.key(4), 3)),
         xp.stack([xr.exponential(k, (300,), xp.float32) for k in xr.split(xr.key(4), 3)]))


# -- the transforms on chosen inputs, against XLA -------------------------------------------------

def _transform(name: str, u: np.ndarray) -> np.ndarray:
    from arrayx.executors.numba import random_kernels

    out = np.empty_like(u)
    random_kernels.transform_kernel(name, u.dtype, _random_math)(u, out)
    return out


def _jax(name: str, u: np.ndarray, tiny_shift: bool = False) -> np.ndarray:
    sqrt2 = u.dtype.type(np.sqrt(2))
    fns = {"normal": lambda v: jax.lax.erf_inv(v) * sqrt2, "exponential": lambda v: -jnp.log1p(-v),
           "gumbel": lambda v: -jnp.log(-jnp.log(v))}
    with jax.enable_x64(True):
        return np.asarray(jax.jit(fns[name])(u))


def _float32_uniforms():
    """Every float32 uniform (2**23 values), erf^-1's argument made of it, and gumbel's (u + tiny)."""
    floats = np.arange(2**23, dtype=np.uint32).astype(np.float32) * np.float32(2.0**-23)
    lo = np.nextafter(np.float32(-1), np.float32(0))
    tiny = np.finfo(np.float32).tiny
    return floats, np.maximum(floats * np.float32(2.0) + lo, lo), np.maximum(floats + tiny, tiny)


@needs_jax
def test_every_float32_value_of_the_kernels_matches_xla():
    floats, erf_argument, gumbel_argument = _float32_uniforms()
    with np.errstate(divide="ignore"):
        same(_transform("normal", erf_argument), _jax("normal", erf_argument))
        same(_transform("exponential", floats), _jax("exponential", floats))
        same(_transform("gumbel", gumbel_argument), _jax("gumbel", gumbel_argument))


@needs_jax
def test_float64_kernels_match_xla():
    rng = np.random.default_rng(44)
    near_one = 1 - np.exp(-rng.uniform(0, 37, 50_000))  # every piece of erf^-1, up to the last float below 1
    u = np.concatenate([rng.random(500_000), near_one, [0.0, 0.41421356237309503, 0.4142135623730951,
                                                        np.nextafter(1.0, 0.0)]])
    erf_argument = np.concatenate([2 * u[:500_000] - 1, near_one, -near_one, [0.0, np.nextafter(-1.0, 0.0)]])
    tiny = np.finfo(np.float64).tiny
    same(_transform("normal", erf_argument), _jax("normal", erf_argument))
    same(_transform("exponential", u), _jax("exponential", u))
    same(_transform("gumbel", np.maximum(u + tiny, tiny)), _jax("gumbel", np.maximum(u + tiny, tiny)))


def test_float16_draws_take_the_arrayx_operations_and_keep_the_kernels(executor, monkeypatch):
    # the kernels are float32/float64 ones: a float16 draw must not count as a kernel failure
    got = xr.uniform(xr.key(1), (100,), xp.float16)
    monkeypatch.setattr(xr, "KERNELS", False)
    same(got, xr.uniform(xr.key(1), (100,), xp.float16))
    assert xr._kernel_problem is None
