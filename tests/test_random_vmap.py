"""Batched random keys: ``vmap`` over a batch of keys gives per-member streams bit-identical to
``jax.vmap`` over the same ``jax.random`` functions (threefry2x32), eagerly and under jit, on
every executor, and bit-identical to drawing with each key alone.  (truncated_normal goes
through erf/erfinv, which arrayx matches to 1e-13, not bit for bit: it is compared with that
tolerance, as in tests/test_random.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from conformance import profile
from tests.conftest import ALL_EXECUTORS

jax = pytest.importorskip("jax")

@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield

jnp = jax.numpy

def TRUNCATED(r, k):
    return r.truncated_normal(k, -1.0, 1.0, (6,))


#: six values per key throughout (one or two dimensions): eagerly on the jax executor each operation
#: compiles an XLA program per shape, so the draws share the hash's programs of one size
DRAWS = [
    ("normal", lambda r, k: r.normal(k, (6,))),
    ("normal_f32", lambda r, k: r.normal(k, (2, 3), dtype=jnp.float32)),
    ("uniform", lambda r, k: r.uniform(k, (2, 3), dtype=jnp.float32, minval=-2.0, maxval=5.0)),
    ("bits", lambda r, k: r.bits(k, (6,))),
    ("split", lambda r, k: r.split(k, 3)),
    ("fold_in", lambda r, k: r.fold_in(k, 7)),
    ("randint", lambda r, k: r.randint(k, (6,), 0, 10)),
    ("exponential", lambda r, k: r.exponential(k, (6,))),
    ("gumbel", lambda r, k: r.gumbel(k, (6,))),
    ("bernoulli", lambda r, k: r.bernoulli(k, 0.3, (6,))),
    ("permutation", lambda r, k: r.permutation(k, 6)),
    ("choice", lambda r, k: r.choice(k, 5, (6,))),
    ("truncated_normal", TRUNCATED),
    ("categorical", lambda r, k: r.categorical(k, (ax if r is ax.random else jnp).asarray([0.1, 2.0, -1.0, 0.5]),
                                               shape=(6,))),
]


def _keys(n=4):
    return ax.random.split(ax.random.PRNGKey(0), n), jax.random.split(jax.random.PRNGKey(0), n)


#: executors that take every other draw in the ci profile, in turn along DRAWS (every draw in the deep
#: one): eagerly on the jax executor each batched operation compiles an XLA program, ~60% of this
#: file's CPU time; the batching rules run on every draw on the other executors
ROTATED = ("jax",)
PARAMS = [pytest.param(ex, d, id=f"{ex}-{n}") for ex in ALL_EXECUTORS for i, (n, d) in enumerate(DRAWS)
          if ex not in ROTATED or not profile.current().sampled or i % 2 == 0]


_WANTS: dict = {}


def _jax_want(draw, jkeys):
    """jax.vmap of ``draw`` by jax.random over ``jkeys``, jitted (the same bits as the eager vmap, traced
    and compiled once) and computed once for the executors' items of a draw."""
    if draw not in _WANTS:
        _WANTS[draw] = np.asarray(jax.jit(jax.vmap(lambda k: draw(jax.random, k)))(jkeys))
    return _WANTS[draw]


@pytest.mark.parametrize("executor, draw", PARAMS, indirect=["executor"])
def test_vmap_over_keys_is_bit_identical_to_jax(executor, draw):
    keys, jkeys = _keys()
    want = _jax_want(draw, jkeys)
    got = np.asarray(ax.vmap(lambda k: draw(ax.random, k))(keys))
    assert got.dtype == want.dtype and got.shape == want.shape
    one_by_one = np.stack([np.asarray(draw(ax.random, keys[i])) for i in range(keys.shape[0])])
    np.testing.assert_array_equal(got, one_by_one)
    staged = np.asarray(ax.jit(ax.vmap(lambda k: draw(ax.random, k)))(keys))
    if draw is TRUNCATED:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(staged, want, rtol=1e-13, atol=1e-13)
        return
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(staged, want)


def test_keys_batched_along_another_axis_and_nested(executor):
    keys, jkeys = _keys(6)
    grid, jgrid = ax.reshape(keys, (2, 3, 2)), jnp.reshape(jkeys, (2, 3, 2))
    draw = lambda r: lambda k: r.normal(k, (2,))  # noqa: E731
    want = jax.vmap(jax.vmap(draw(jax.random)), in_axes=1)(jgrid)
    got = ax.vmap(ax.vmap(draw(ax.random)), in_axes=1)(grid)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
