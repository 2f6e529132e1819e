"""Manipulation functions on every executor against the NumPy executor and NumPy itself,
dtype promotion in concat/stack, and argument errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import arrayx as xp
from tests.conftest import assert_matches_numpy, assert_same

A = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
F = np.linspace(-1.0, 1.0, 6).reshape(2, 3)


@pytest.mark.parametrize("fn, args, kwargs, expected", [
    (xp.broadcast_to, ((3,), (2, 3)), {}, np.broadcast_to(np.arange(3), (2, 3))),
    (xp.expand_dims, ((2, 3), 0), {}, np.zeros((1, 2, 3))),
    (xp.expand_dims, ((2, 3), -1), {}, np.zeros((2, 3, 1))),
    (xp.expand_dims, ((2, 3), (0, -1)), {}, np.zeros((1, 2, 3, 1))),
    (xp.expand_dims, ((2, 3), (1, 3)), {}, np.zeros((2, 1, 3, 1))),
    (xp.squeeze, ((1, 3, 1), 0), {}, np.zeros((3, 1))),
    (xp.squeeze, ((1, 3, 1), (0, -1)), {}, np.zeros((3,))),
    (xp.reshape, ((2, 3, 4), (4, -1)), {}, np.zeros((4, 6))),
    (xp.reshape, ((2, 3, 4), (24,)), {"copy": True}, np.zeros((24,))),
    (xp.reshape, ((0, 3), (-1, 3)), {}, np.zeros((0, 3))),
    (xp.tile, ((2, 3), (2,)), {}, np.zeros((2, 6))),
    (xp.tile, ((2, 3), (2, 1, 2)), {}, np.zeros((2, 2, 6))),
])
def test_shapes(executor, fn, args, kwargs, expected):
    shape, *rest = args
    x = xp.reshape(xp.arange(int(np.prod(shape)), dtype=xp.float64), shape)
    out = fn(x, *rest, **kwargs)
    assert out.shape == expected.shape
    assert out.dtype == xp.float64
    assert_matches_numpy(fn, x, *rest, **kwargs)


def test_values_against_numpy(executor):
    x = xp.asarray(A)
    assert_same(xp.flip(x), np.flip(A))
    assert_same(xp.flip(x, axis=(0, 2)), np.flip(A, axis=(0, 2)))
    assert_same(xp.flip(x, axis=-2), np.flip(A, axis=-2))
    assert_same(xp.moveaxis(x, 0, -1), np.moveaxis(A, 0, -1))
    assert_same(xp.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(A, (0, 1), (2, 0)))
    assert_same(xp.permute_dims(x, (2, 0, 1)), np.transpose(A, (2, 0, 1)))
    assert_same(xp.roll(x, 5), np.roll(A, 5))
    assert_same(xp.roll(x, -1, axis=1), np.roll(A, -1, axis=1))
    assert_same(xp.roll(x, (1, 2), axis=(0, 2)), np.roll(A, (1, 2), axis=(0, 2)))
    assert_same(xp.roll(x, 2, axis=(0, 2)), np.roll(A, 2, axis=(0, 2)))
    assert_same(xp.repeat(x, 2), np.repeat(A, 2))
    assert_same(xp.repeat(x, 3, axis=1), np.repeat(A, 3, axis=1))
    assert_same(xp.tile(x, (2, 1, 3)), np.tile(A, (2, 1, 3)))
    assert_same(xp.tile(x, (2, 1, 1, 3)), np.tile(A, (2, 1, 1, 3)))
    assert_same(xp.reshape(x, (4, 6)), A.reshape(4, 6))
    assert_same(xp.unstack(x, axis=1), list(np.moveaxis(A, 1, 0)))
    assert_same(xp.unstack(x), list(A))
    assert_same(xp.concat([x, x + 100], axis=1), np.concatenate([A, A + 100], axis=1))
    assert_same(xp.concat([x, x], axis=None), np.concatenate([A.ravel(), A.ravel()]))
    assert_same(xp.stack([x, x + 1], axis=-1), np.stack([A, A + 1], axis=-1))
    assert_same(xp.stack([x]), A[None])


def test_repeat_counts_array(executor):
    x = xp.asarray(A)
    counts = np.array([1, 0, 2])
    assert_same(xp.repeat(x, xp.asarray(counts), axis=1), np.repeat(A, counts, axis=1))
    assert_same(xp.repeat(x, xp.asarray([2]), axis=-1), np.repeat(A, 2, axis=-1))
    assert_same(xp.repeat(x, xp.asarray([3], dtype=xp.uint8)), np.repeat(A, 3))


def test_repeat_refuses_a_negative_count(executor):
    with pytest.raises(ValueError, match="negative"):  # (the jax executor's own eager path gave a result)
        np.asarray(xp.repeat(xp.asarray(A), xp.asarray(np.array([1, -1, 2])), axis=1))


def test_broadcast(executor):
    a, b = xp.asarray([[1.0], [2.0]]), xp.asarray([1, 2, 3], dtype=xp.int32)
    outs = xp.broadcast_arrays(a, b)
    assert isinstance(outs, tuple) and len(outs) == 2
    assert_same(outs, list(np.broadcast_arrays(np.array([[1.0], [2.0]]), np.array([1, 2, 3], np.int32))))
    assert outs[1].dtype == xp.int32  # no promotion
    assert xp.broadcast_arrays() == ()
    assert_matches_numpy(lambda u, v: xp.broadcast_arrays(u, v), a, b)
    assert_same(xp.broadcast_to(b, (4, 3)), np.broadcast_to(np.array([1, 2, 3], np.int32), (4, 3)))
    assert xp.broadcast_to(b, (3,)) is b
    assert xp.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    assert xp.broadcast_shapes() == ()
    assert xp.broadcast_shapes((None, 1), (1, 4)) == (None, 4)
    assert xp.broadcast_shapes((5, 0), (1,)) == (5, 0)


@pytest.mark.parametrize("fn", [xp.concat, xp.stack])
def test_join_promotes(executor, fn):
    parts = [xp.asarray([1, 2], dtype=xp.int8), xp.asarray([3, 4], dtype=xp.int16),
             xp.asarray([0.5, 1.5], dtype=xp.float32)]
    out = fn(parts)
    assert out.dtype == xp.float32
    assert_matches_numpy(fn, parts)
    out = fn((xp.asarray([1], dtype=xp.uint8), xp.asarray([-1], dtype=xp.int8)))
    assert out.dtype == xp.int16
    assert_same(out, np.asarray([1, -1], np.int16).reshape(out.shape))


def test_reshape_copy(executor):
    x = xp.asarray([[1, 2], [3, 4]])
    assert xp.reshape(x, (2, 2)) is x  # no-op keeps the array
    y = xp.reshape(x, (4,), copy=True)
    y[0] = 100
    assert int(x[0, 0]) == 1
    if executor == "numpy":
        with pytest.raises(ValueError):
            xp.reshape(x.mT, (4,), copy=False)  # a transposed view cannot be reshaped without copying


def test_zero_size_and_0d(executor):
    e = xp.zeros((0, 3))
    assert xp.concat([e, xp.ones((2, 3))]).shape == (2, 3)
    assert xp.reshape(e, (3, 0)).shape == (3, 0)
    assert xp.flip(xp.asarray(5.0)).shape == ()
    assert xp.expand_dims(xp.asarray(5.0), 0).shape == (1,)
    assert xp.tile(xp.asarray(5.0), (2, 2)).shape == (2, 2)
    assert_same(xp.repeat(xp.asarray(7), 3), np.array([7, 7, 7]))
    assert xp.permute_dims(xp.asarray(1.0), ()).shape == ()
    assert xp.unstack(e) == ()


@settings(max_examples=15, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
    data=st.data(),
)
def test_permute_moveaxis_roundtrip_hypothesis(shape, data):
    n = len(shape)
    perm = tuple(data.draw(st.permutations(range(n))))
    a = np.arange(int(np.prod(shape))).reshape(shape)
    x = xp.asarray(a)
    assert_same(xp.permute_dims(x, perm), np.transpose(a, perm))
    src = data.draw(st.integers(-n, n - 1))
    dst = data.draw(st.integers(-n, n - 1))
    assert_same(xp.moveaxis(x, src, dst), np.moveaxis(a, src, dst))
    shift = data.draw(st.integers(-5, 5))
    axis = data.draw(st.none() | st.integers(-n, n - 1))
    assert_same(xp.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis))


# -- errors ---------------------------------------------------------------------------------------

def _strict(fn):
    """``fn()`` in strict mode: the default mode converts NumPy arrays and Python scalars (tests/api/test_scalars_and_ints.py)."""
    with xp.strict():
        return fn()


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: xp.broadcast_to(x, (4, 2)), ValueError, r"broadcast_to: .*\(2, 3\).*\(4, 2\)"),
    (lambda x: xp.broadcast_arrays(x, xp.ones(4)), ValueError, "broadcast_arrays"),
    (lambda x: xp.broadcast_shapes((2,), (3,)), ValueError, "broadcast_shapes"),
    (lambda x: xp.broadcast_shapes(3), TypeError, "broadcast_shapes: shapes.0. must be a tuple"),
    (lambda x: xp.concat([x, xp.ones((2, 4))]), ValueError, r"concat: arrays\[1\] has shape \(2, 4\)"),
    (lambda x: xp.concat(x), TypeError, "concat: arrays must be a tuple or list"),
    (lambda x: xp.concat([]), ValueError, "concat: needs at least one array"),
    (lambda x: _strict(lambda: xp.concat([x, np.ones((2, 3))])), TypeError, r"concat: arrays\[1\] must be an arrayx array"),
    (lambda x: xp.concat([xp.asarray(1.0), xp.asarray(2.0)]), ValueError, "zero-dimensional"),
    (lambda x: xp.stack([x, xp.ones((3, 2))]), ValueError, "stack: all arrays must have the same shape"),
    (lambda x: xp.stack([x], axis=3), IndexError, "stack: axis=3 is out of bounds"),
    (lambda x: xp.expand_dims(x, 3), IndexError, "expand_dims: axis=3"),
    (lambda x: xp.expand_dims(x, (0, 0)), ValueError, "expand_dims: .*repeated"),
    (lambda x: xp.expand_dims(x, 1.0), TypeError, "expand_dims: axis must be an int"),
    (lambda x: xp.squeeze(x, 0), ValueError, r"squeeze: axis 0 has size 2"),
    (lambda x: xp.squeeze(x, 2), IndexError, "squeeze: axis=2 is out of bounds"),
    (lambda x: xp.flip(x, axis=[0]), TypeError, "flip: axis must be an int or a tuple"),
    (lambda x: xp.moveaxis(x, (0, 1), 0), ValueError, "moveaxis: `source` and `destination` arguments must have the same number of elements"),
    (lambda x: xp.moveaxis(x, (0, 0), (0, 1)), ValueError, "moveaxis: repeated axis in `source` argument"),
    # NumPy's AxisError and wording (a ValueError and an IndexError): clients' tests match it
    (lambda x: xp.moveaxis(x, 3, 0), np.exceptions.AxisError, "source: axis 3 is out of bounds for array of dimension 2"),
    (lambda x: xp.moveaxis(x, 0, -3), ValueError, "destination: axis -3 is out of bounds for array of dimension 2"),
    (lambda x: xp.moveaxis(x, (0, 5), (1, 0)), IndexError, "source: axis 5 is out of bounds for array of dimension 2"),
    (lambda x: xp.permute_dims(x, (0,)), ValueError, "permute_dims: axes .* permutation"),
    (lambda x: xp.permute_dims(x, (0, 0)), ValueError, "permute_dims: .*repeated"),
    (lambda x: xp.reshape(x, (4, 2)), ValueError, r"reshape: cannot reshape .*\(2, 3\) \(size 6\)"),
    (lambda x: xp.reshape(x, (-1, -1)), ValueError, "reshape: only one dimension can be -1"),
    (lambda x: xp.reshape(x, (-1, 4)), ValueError, "reshape: cannot reshape"),
    (lambda x: xp.reshape(x, (6,), copy="yes"), TypeError, "reshape: copy must be"),
    (lambda x: xp.reshape(x, x), TypeError, "reshape: shape must be a tuple of ints, got an array"),
    (lambda x: xp.roll(x, (1, 2), axis=0), ValueError, "roll: shift .* same length"),
    (lambda x: xp.roll(x, (1, 2)), TypeError, "roll: shift must be an int when axis is None"),
    (lambda x: xp.repeat(x, -1), ValueError, "repeat: repeats must be non-negative"),
    (lambda x: xp.repeat(x, 1.5), TypeError, "repeat: repeats must be an int"),
    (lambda x: xp.repeat(x, xp.asarray([1, 2]), axis=1), ValueError, "repeat: a repeats array must be 1-D of length 1 or 3"),
    (lambda x: xp.repeat(x, xp.asarray([1.0]), axis=1), TypeError, "repeat: repeats must have an integer dtype"),
    (lambda x: xp.tile(x, 2), TypeError, "tile: repetitions must be a tuple"),
    (lambda x: xp.tile(x, (-1,)), ValueError, "tile: repetitions must be non-negative"),
    (lambda x: xp.unstack(xp.asarray(1.0)), ValueError, "unstack: x must have at least one dimension"),
    (lambda x: xp.unstack(x, axis=2), IndexError, "unstack: axis=2"),
    (lambda x: _strict(lambda: xp.permute_dims(np.ones(3), (0,))), TypeError, "permute_dims: x must be an arrayx array"),
])
def test_errors(call, exc, match):
    x = xp.reshape(xp.arange(6.0), (2, 3))
    with pytest.raises(exc, match=match):
        call(x)
