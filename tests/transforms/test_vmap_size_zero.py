"""vmap over operands with a size-0 axis (the differential suite's vmap(tensordot) class).

Each case runs vmap (and jit(vmap)) on every executor and is compared with the NumPy executor and
with NumPy's tensordot of each member, stacked: the shapes and dtypes must match exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from tests.conftest import assert_matches_numpy

# (shape of x1's members, shape of x2's members, axes), batch of 2 on both operands
CASES = [
    ((0,), (0, 0), 1),            # the suite's reproducer: contracted 0, free 0
    ((0, 3, 3), (0, 3, 3, 2, 2), 3),  # linalg.tensordot's: contracted 0*3*3, free (2, 2)
    ((3, 0), (0, 4), 1),          # contracted axis of size 0: zeros of shape (3, 4)
    ((0, 2), (2, 5), 1),          # a free axis of size 0
    ((2, 3), (3, 0), 1),
    ((4,), (4,), 0),              # outer product, no size 0 (the rule's ordinary path)
]


def _members(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.integers(-3, 4, (2, *shape))).astype(dtype)


@pytest.mark.parametrize("s1,s2,axes", CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("jit", [False, True], ids=["vmap", "jit-vmap"])
def test_vmap_tensordot_with_size_zero_axes(executor, s1, s2, axes, jit):
    a, b = _members(s1, np.complex64, 1), _members(s2, np.int8, 2)
    f = ax.vmap(lambda x, y: ax.tensordot(x, y, axes=axes))
    f = ax.jit(f) if jit else f
    got = assert_matches_numpy(f, ax.asarray(a), ax.asarray(b))
    want = np.stack([np.tensordot(a[i], b[i].astype(np.complex64), axes=axes) for i in range(2)])
    assert got.shape == want.shape and got.dtype == np.complex64
    np.testing.assert_array_equal(np.asarray(got), want)


def test_vmap_linalg_tensordot_with_size_zero_axes(executor):
    a, b = _members((0, 3, 3), np.int8, 3), _members((0, 3, 3, 2, 2), np.float32, 4)
    got = assert_matches_numpy(ax.vmap(lambda x, y: ax.linalg.tensordot(x, y, axes=3)), ax.asarray(a), ax.asarray(b))
    assert got.shape == (2, 2, 2) and got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), np.zeros((2, 2, 2), np.float32))
