"""Eager indexing on the JAX executor: index arrays go through arrayx's primitives
(``general_eager_keys``): ``gather`` as one compiled call, ``boolean_mask`` selected on the host views
when the arrays live in host memory; basic keys (ints, unit-step slices, None, Ellipsis) as one
compiled ``dynamic_slice`` (``executors/jax/indexing.py``).  Values, dtypes, bounds errors and bit
patterns are the NumPy executor's."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests.conftest import assert_matches_numpy, assert_same
from tests import covering
from tests.executors.conftest import only_on

pytestmark = only_on("jax")


def test_the_jax_executor_sends_index_arrays_down_the_general_path(monkeypatch):
    from arrayx.api import indexing

    x = xp.asarray(np.arange(12.0).reshape(3, 4))
    assert indexing._eager_native_key("__getitem__", x, (xp.asarray([0, 2]),)) is None
    assert indexing._eager_native_key("__getitem__", x, (1, slice(None))) == (1, slice(None))
    with xp.use_executor("numpy"):
        y = xp.asarray(np.arange(12.0).reshape(3, 4))
        assert indexing._eager_native_key("__getitem__", y, (xp.asarray([0, 2]),)) is not None


_INDEX_KEYS = {
    "rows": lambda x: (xp.asarray(np.arange(x.shape[0]) % 3 == 1),),
    "columns": lambda x: (slice(None), xp.asarray(np.arange(x.shape[1]) % 2 == 0)),
    "2-d mask": lambda x: (xp.asarray(np.ones(x.shape[:2], dtype=bool) & (np.arange(x.shape[1]) < 3)),),
    "mask-and-int": lambda x: (xp.asarray(np.arange(x.shape[0]) % 3 == 1), 2),
    "ints": lambda x: (xp.asarray([0, -1, 2, 2]),),
    "2-d ints": lambda x: (slice(None), xp.asarray([[1, 0], [3, 3]])),
    "pairs": lambda x: (xp.asarray([1, 0]), xp.asarray([3, 1])),
    "empty": lambda x: (xp.asarray(np.zeros(x.shape[0], dtype=bool)),),  # last: a dtype that has another key too
}


#: (key, dtype): every pair in the deep profile; in the ci profile (new XLA programs per key and dtype)
#: each key in one dtype, the dtypes in turn (tests/covering.rotate)
@pytest.mark.parametrize("key, dtype", [pytest.param(_INDEX_KEYS[k], d, id=f"{d}-{k}") for k, d in covering.rotate(
    [(k, d) for k in _INDEX_KEYS for d in ("float64", "float32", "int64", "bool", "complex128")])])
def test_index_arrays_match_numpy(dtype, key):
    rng = np.random.default_rng(11)
    host = (rng.normal(size=(30, 5, 4)) * 10).astype(dtype) if dtype != "complex128" else \
        (rng.normal(size=(30, 5, 4)) + 1j * rng.normal(size=(30, 5, 4)))
    x = xp.asarray(host)
    got = assert_matches_numpy(lambda x: x[key(x)], x)
    assert got.executor == "jax"


def test_a_mask_selection_keeps_every_bit():
    vals = np.array([-0.0, 5e-324, -5e-324, np.nan, np.inf, 1.0], dtype=np.float64)
    x = xp.asarray(vals)
    got = np.asarray(x[x == x])  # NaN left out
    want = vals[vals == vals]
    assert got.tobytes() == want.tobytes()
    got2 = np.asarray(x[xp.asarray([True] * 6)])
    assert got2.tobytes() == vals.tobytes()


def test_out_of_range_index_arrays_raise_as_eagerly_elsewhere():
    x = xp.asarray(np.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        x[xp.asarray([3])]
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, xp.asarray([-5])]
    with pytest.raises(IndexError):
        x[xp.asarray([True, False])]  # a mask of the wrong length


@pytest.mark.parametrize("in_host_memory", [True, False], ids=["host-view", "one-program"])
def test_the_bounds_check_reads_min_and_max_in_one_step(monkeypatch, in_host_memory):
    """An index array's (min, max) for the bounds check: read on the host's view where the buffer
    lives in host memory (no program), else one compiled program for both (three, per shape, before)."""
    from arrayx.executors.jax import executor as jax_executor

    monkeypatch.setattr(jax_executor, "_in_host_memory", lambda buf: in_host_memory)
    monkeypatch.setattr(jax_executor, "_RANGE", None)
    ex = base.get("jax")
    for values in ([4, -7, 2], [[0, 9], [3, 3]], [5]):
        idx = xp.asarray(np.array(values, dtype=np.int32))
        assert ex.index_range(idx._buf) == (int(np.min(values)), int(np.max(values)))
    assert (jax_executor._RANGE is None) == in_host_memory
    x = xp.asarray(np.arange(12.0))
    with pytest.raises(IndexError, match="index 12 is out of bounds"):
        x[xp.asarray([1, 12])]
    assert_same(x[xp.asarray([[-12, 11]])], np.arange(12.0)[[[-12, 11]]])


def test_masked_selection_inside_jit_and_lazy():
    host = np.random.default_rng(3).normal(size=(50, 4))
    x = xp.asarray(host)
    with xp.lazy():
        y = x * 2.0
        sel = y[y[:, 0] > 0]
        z = xp.sum(sel, axis=0)
    assert_same(sel, (host * 2.0)[host[:, 0] > 0])
    np.testing.assert_allclose(np.asarray(z), (host * 2.0)[host[:, 0] > 0].sum(0), rtol=1e-12)
    f = xp.jit(lambda a, i: a[i] + 1.0)
    assert_same(f(x, xp.asarray([4, 0, 49])), host[[4, 0, 49]] + 1.0)


# -- basic keys: one compiled window ---------------------------------------------------------------

_BASIC_KEYS = [3, -1, slice(2, 5), slice(None, -2), slice(-3, None), slice(7, 2), slice(None), (1, 2), (-1, slice(1, 3)),
               (slice(None), 2), (slice(None), -4), (None, slice(1, 4)), (slice(0, 3), None, 1), (Ellipsis, 2),
               (1, Ellipsis), (Ellipsis, None), (slice(1, 100), slice(-100, 2)), (slice(None, None, 1), 0),
               (slice(None, None, 2), 1), (slice(None, None, -1),), (0, 0)]


#: (key, dtype): every pair in the deep profile; each key in one dtype, the dtypes in turn, in the ci profile
@pytest.mark.parametrize("key, dtype", [  # (rotated by position: slices are not hashable)
    pytest.param(_BASIC_KEYS[i], d, id=f"{d}-{_BASIC_KEYS[i]!r}") for i, d in covering.rotate(
        [(i, d) for i in range(len(_BASIC_KEYS)) for d in ("float64", "int32", "bool", "complex64")])])
def test_basic_keys_equal_the_numpy_executor(key, dtype):
    a = (np.arange(6 * 5).reshape(6, 5) % 7).astype(dtype)
    got = xp.asarray(a)[key]
    assert_same(got, a[key])
    with xp.use_executor("numpy"):
        assert_same(got, np.asarray(xp.asarray(a)[key]))


def test_a_basic_key_is_one_compiled_window_whatever_the_integers():
    from arrayx.executors.jax import indexing

    x = xp.asarray(np.arange(40.0).reshape(8, 5))
    x[2], x[1:3]  # compiled once each
    before = indexing._program()._cache_size()
    assert before >= 2  # the two keys above went through the window
    rows = [x[i] for i in range(8)]  # one program for every i
    starts = [x[i:i + 2] for i in range(6)]  # one per window size, not per start
    assert indexing._program()._cache_size() == before
    for i in range(8):
        assert_same(rows[i], np.arange(40.0).reshape(8, 5)[i])
    for i in range(6):
        assert_same(starts[i], np.arange(40.0).reshape(8, 5)[i:i + 2])


def test_what_the_window_does_not_take_is_left_to_jax():
    from arrayx.executors.jax import indexing

    assert indexing.window_of((4, 5), (slice(None, None, 2),)) is None
    assert indexing.window_of((4, 5), (Ellipsis, Ellipsis)) is None
    assert indexing.window_of((4, 5), (np.arange(2),)) is None
    assert indexing.window_of((4, 5), (1, 2, 3)) is None
    assert indexing.window_of((4, 5), (slice(1, 3), -1)) == ((1, 4), (2, 1), (2,))
    assert indexing.window_of((4, 5), (None, 2)) == ((2, 0), (1, 5), (1, 5))


def test_basic_keys_of_views_and_writes_keep_their_links():
    a = np.arange(20.0).reshape(4, 5)
    x = xp.asarray(a)
    row = x[1]
    x[1, 2] = -1.0  # a write through the base reaches the view made by the window
    want = a.copy()
    want[1, 2] = -1.0
    assert_same(x, want)
    assert_same(row, want[1])
    col = x[:, 3]
    col[0] = 99.0
    want[0, 3] = 99.0
    assert_same(x, want)
    t = x.T[:, 1]  # a deferred transpose sliced inside the program
    assert_same(t, want.T[:, 1])
