"""A small CNN (conv -> relu -> max_pool -> dense -> log_softmax) trained with jit(grad) on every
executor reaches the same losses as the same model written in JAX."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import arrayx as ax
from benchmarks.bench_cnn import cnn_loss as _loss  # the model the CNN benchmark times

jax = pytest.importorskip("jax")

@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield

jnp = jax.numpy

STEPS = 4
LEARNING_RATE = 0.5


def _data():
    rng = np.random.default_rng(0)
    images = rng.normal(size=(8, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 3, size=8)
    params = {
        "conv": (rng.normal(size=(4, 1, 3, 3)) * 0.5).astype(np.float32),
        "bias": np.zeros(4, np.float32),
        "dense": (rng.normal(size=(4 * 4 * 4, 3)) * 0.2).astype(np.float32),
    }
    return images, labels, params


def _sgd(tree_map):
    return lambda params, grads: tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def _train(loss, grad_fn, params, images, labels, update):
    losses = []
    for _ in range(STEPS):
        losses.append(float(loss(params, images, labels)))
        grads = grad_fn(params, images, labels)
        params = update(params, grads)
    losses.append(float(loss(params, images, labels)))
    return losses, params


@functools.lru_cache(maxsize=None)  # once for all executors: XLA compiles take seconds here
def _jax_reference():
    images, labels, params = _data()
    loss = _loss(jnp, jax.lax.conv, lambda h: jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2),
                                                                    (1, 1, 2, 2), "VALID"),
                 jax.nn.log_softmax, lambda y, n: jax.nn.one_hot(y, n, dtype=jnp.float32))
    return _train(jax.jit(loss), jax.jit(jax.grad(loss)), jax.tree.map(jnp.asarray, params), jnp.asarray(images),
                  jnp.asarray(labels), jax.jit(_sgd(jax.tree.map)))


def test_small_cnn_trains_like_jax(executor):
    images, labels, params = _data()
    loss = _loss(ax, ax.lax.conv, lambda h: ax.lax.max_pool(h, (2, 2)), ax.nn.log_softmax,
                 lambda y, n: ax.nn.one_hot(y, n, dtype=ax.float32))
    losses, trained = _train(ax.jit(loss), ax.jit(ax.grad(loss)), ax.pytree.map(ax.asarray, params),
                             ax.asarray(images), ax.asarray(labels), ax.jit(_sgd(ax.pytree.map)))
    want, want_params = _jax_reference()
    assert losses[-1] < losses[0] * 0.8  # it learns
    np.testing.assert_allclose(losses, want, rtol=2e-5)
    for k in params:
        assert trained[k].dtype == ax.float32
        np.testing.assert_allclose(np.asarray(trained[k]), np.asarray(want_params[k]), rtol=1e-4, atol=1e-5)
