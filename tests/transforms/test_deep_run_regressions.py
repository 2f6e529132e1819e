"""What the deep conformance run (``python -m conformance --max-examples 14``, 10,397 examples) found,
on every executor against the NumPy executor's eager answer (or the exact one)."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from tests.conftest import assert_same, on_numpy


@pytest.mark.parametrize("a_shape, b_shape, a_axis", [
    ((2, 2, 1, 3, 3), (2, 3), 0),     # a stack of matrices per member, one vector per member (the run's case)
    ((2, 4, 3, 3), (2, 3), 0),
    ((2, 3, 3), (2, 3), 0),
    ((4, 3, 3), (2, 3), None),        # an unbatched stack, batched vectors
    ((3, 3), (2, 3), None),           # one matrix: the vectors become its right-hand sides
    ((2, 2, 1, 3, 3), (2, 2, 1, 3, 2), 0),  # matrices on the right: batch dims broadcast per member
])
def test_vmap_of_solve_with_one_vector_per_member(executor, a_shape, b_shape, a_axis):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape) + 4 * np.eye(3)
    b = rng.standard_normal(b_shape).astype(np.complex64)  # mixed dtypes, as drawn
    got = ax.vmap(ax.linalg.solve, in_axes=(a_axis, 0))(ax.asarray(a), ax.asarray(b))
    want = np.stack([np.asarray(on_numpy(ax.linalg.solve, ax.asarray(a if a_axis is None else a[i]), ax.asarray(b[i])))
                     for i in range(2)])
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def test_clip_with_read_only_integer_bounds(executor):
    # vmap broadcasts an unbatched bound into a read-only view; array-api-compat's clip wrote into it
    x = ax.asarray(np.arange(12, dtype=np.uint64).reshape(2, 6))
    lo = ax.asarray(np.asarray([3, 1, 4, 1, 5, 9], dtype=np.uint64))
    got = ax.vmap(lambda v, m: ax.clip(v, min=m, max=7), in_axes=(0, None))(x, lo)
    assert_same(got, on_numpy(lambda v, m: ax.clip(v, min=ax.broadcast_to(m, v.shape), max=7), x, lo))
    np.testing.assert_array_equal(np.asarray(got), np.clip(np.arange(12).reshape(2, 6), [3, 1, 4, 1, 5, 9], 7))
    empty = ax.vmap(lambda v, m: ax.clip(v, min=m, max=87))(ax.asarray(np.zeros((2, 2, 0, 0), np.uint64)),
                                                           ax.asarray(np.zeros((2, 0), np.uint64)))
    assert tuple(empty.shape) == (2, 2, 0, 0) and empty.dtype == ax.uint64


@pytest.mark.parametrize("ord", [2, 3, 1.5])
def test_norm_gradient_where_the_sum_of_powers_underflows(executor, ord):
    # NumPy's 2-norm of [-4.57e-162] is 4.45e-162 (x**2 is subnormal): |x| / ||x|| was 1.027, not 1
    tiny = ax.asarray(np.asarray(-4.565061582088917e-162))
    assert float(ax.grad(lambda v: ax.linalg.vector_norm(v, ord=ord))(tiny)) == -1.0
    v = np.asarray([3e-170, -4e-170])
    g = np.asarray(ax.grad(lambda u: ax.linalg.vector_norm(u, ord=ord))(ax.asarray(v)))
    want = np.sign(v) * (np.abs(v) / np.linalg.norm(v / 1e-170, ord) / 1e-170) ** (ord - 1)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    huge = np.asarray([3e200, 4e200])  # the squares overflow: the forward is inf, the gradient still exists
    g = np.asarray(ax.grad(lambda u: ax.linalg.vector_norm(u))(ax.asarray(huge)))
    np.testing.assert_allclose(g, [0.6, 0.8], rtol=1e-12)
    z = ax.grad(lambda u: ax.linalg.vector_norm(u, ord=ord))(ax.zeros(3))
    np.testing.assert_array_equal(np.asarray(z), np.zeros(3))  # 0 at 0, as before
