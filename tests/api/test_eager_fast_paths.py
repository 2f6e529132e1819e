"""The eager fast paths (``x[:, None]``, ``x.T``, zeros/ones/full/empty, where, concat, finfo,
``__array_namespace_info__().dtypes()``) give what the general paths give: values, dtypes, views,
errors, strict mode's refusals, and the same answers under jit and lazy()."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from tests.conftest import assert_same, to_numpy


def _host(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


# -- getitem with None ---------------------------------------------------------------------------

KEYS = [(slice(None), None), (None,), (1, 2, None), (None, 1), (0, None, slice(1, 3)), (None, None),
        (-1, None, -2), (slice(None, None, -1), None, 0), None]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_newaxis_keys_match_numpy(executor, key):
    host = _host((3, 4, 5))
    got = ax.asarray(host)[key]
    assert_same(got, host[key])


def test_newaxis_results_are_views_on_numpy():
    host = _host((3, 4, 5))
    with ax.use_executor("numpy"):
        x = ax.asarray(host)
        for key in [(slice(None), None), (1, 2, None), (None,), (None, 0)]:
            assert np.shares_memory(np.asarray(x[key]), np.asarray(x)), key


def test_newaxis_keys_out_of_range_and_too_many_raise(executor):
    x = ax.asarray(_host((3, 4)))
    for key in [(3, None), (None, 0, 4), (-4, None)]:
        with pytest.raises(IndexError):
            x[key]
    with pytest.raises(IndexError):
        x[0, 0, 0, None]
    assert_same(x[None, 0, None, 0, None], _host((3, 4))[None, 0, None, 0, None])


def test_newaxis_on_a_0d_array(executor):
    got = ax.asarray(2.5)[None]
    assert got.shape == (1,)
    assert_same(got, np.asarray([2.5]))


def test_newaxis_view_writes_through_on_every_executor(executor):
    x = ax.asarray(np.zeros((2, 3)))
    v = x[:, None]
    x[0, 1] = 7.0
    assert float(v[0, 0, 1]) == 7.0


# -- .T ------------------------------------------------------------------------------------------

def test_transpose_matches_and_is_a_view(executor):
    host = _host((3, 5))
    x = ax.asarray(host)
    t = x.T
    assert_same(t, host.T)
    x[1, 2] = 9.0  # a view on every executor (functional ones link it)
    assert float(t[2, 1]) == 9.0
    with pytest.raises(ValueError, match="2-D"):
        ax.asarray(_host((2, 3, 4))).T
    with pytest.raises(ValueError, match="2-D"):
        ax.asarray(_host((3,))).T


def test_transpose_on_numpy_shares_memory_and_works_under_transforms():
    host = _host((3, 5))
    with ax.use_executor("numpy"):
        x = ax.asarray(host)
        assert np.shares_memory(np.asarray(x.T), np.asarray(x))
        assert_same(ax.jit(lambda a: a.T * 2.0)(x), host.T * 2.0)
        g = ax.grad(lambda a: ax.sum(a.T * ax.asarray(np.arange(15.0).reshape(5, 3))))(x)
        assert_same(g, np.arange(15.0).reshape(5, 3).T)
        with ax.lazy():
            y = x.T + 1.0
        assert_same(y, host.T + 1.0)


# -- creation ------------------------------------------------------------------------------------

def test_creation_values_and_dtypes(executor):
    assert_same(ax.zeros((2, 3)), np.zeros((2, 3)))
    assert_same(ax.ones((2, 3), dtype=ax.int8), np.ones((2, 3), np.int8))
    assert_same(ax.zeros(4, dtype=ax.bool), np.zeros(4, bool))
    assert_same(ax.ones((2,), dtype=ax.bool), np.ones(2, bool))
    assert_same(ax.full((2, 2), 2.5), np.full((2, 2), 2.5))
    assert_same(ax.full((3,), 1 + 2j), np.full(3, 1 + 2j))
    assert_same(ax.full((3,), 7), np.full(3, 7, np.int64))
    assert_same(ax.zeros((2,), dtype=ax.complex64), np.zeros(2, np.complex64))
    assert ax.empty((0, 3)).shape == (0, 3) and ax.empty((2, 3), dtype=ax.float32).dtype == ax.float32
    neg = to_numpy(ax.full((3,), -0.0))
    assert np.all(np.signbit(neg)) and np.all(neg == 0)


def test_creation_shapes_and_errors(executor):
    assert ax.zeros(3).shape == (3,)
    assert ax.zeros([2, np.int64(3)]).shape == (2, 3)
    assert ax.zeros(()).shape == ()
    for bad in [(2, -1), (2.0, 3), (True, 2)]:
        with pytest.raises((TypeError, ValueError), match="zeros"):
            ax.zeros(bad)
    with pytest.raises(OverflowError, match="full"):
        ax.full((2,), 300, dtype=ax.int8)


def test_creation_under_jit_and_on_a_device():
    with ax.use_executor("numpy"):
        f = ax.jit(lambda a: a + ax.ones(a.shape))
        assert_same(f(ax.asarray(np.zeros(3))), np.ones(3))
        assert_same(ax.zeros((2,), device="numpy"), np.zeros(2))


# -- where ---------------------------------------------------------------------------------------

def test_where_matches_numpy(executor):
    a, b = _host((4, 5), 1), _host((4, 5), 2)
    c = a > 0
    x, y, cx = ax.asarray(a), ax.asarray(b), ax.asarray(c)
    assert_same(ax.where(cx, x, y), np.where(c, a, b))
    assert_same(ax.where(cx, x, 0.0), np.where(c, a, 0.0))
    assert_same(ax.where(cx, -1.0, y), np.where(c, -1.0, b))
    assert_same(ax.where(cx, x, 0), np.where(c, a, 0.0))
    row = ax.asarray(b[:1])
    assert_same(ax.where(cx, x, row), np.where(c, a, b[:1]))
    assert_same(ax.where(cx[:, :1], x, y), np.where(c[:, :1], a, b))
    ints = ax.asarray(np.arange(20).reshape(4, 5))
    assert_same(ax.where(cx, ints, x), np.where(c, np.arange(20).reshape(4, 5), a))  # promoted


def test_where_errors_and_strict_mode(executor):
    x = ax.asarray(_host((4, 5)))
    c = x > 0
    with pytest.raises(ValueError, match="where"):
        ax.where(c, x, ax.asarray(_host((3,))))
    with pytest.raises(TypeError, match="where"):
        ax.where(x, x, x)  # not a bool condition
    ints = ax.asarray(np.arange(20).reshape(4, 5))
    with ax.strict():
        with pytest.raises(TypeError, match="where"):
            ax.where(c, ints, x)  # int64 with float64: the standard has no such pair
        with pytest.raises(TypeError, match="where"):
            ax.where(c, ints, 1.5)  # a float scalar with an integer array
        assert_same(ax.where(c, x, x), np.asarray(x))


# -- concat --------------------------------------------------------------------------------------

def test_concat_matches_numpy(executor):
    a, b = _host((2, 3), 1), _host((4, 3), 2)
    x, y = ax.asarray(a), ax.asarray(b)
    assert_same(ax.concat([x, y]), np.concatenate([a, b]))
    assert_same(ax.concat((x.T, y.T), axis=-1), np.concatenate([a.T, b.T], axis=-1))
    assert_same(ax.concat([x]), a)
    assert_same(ax.concat([x, y], axis=None), np.concatenate([a.ravel(), b.ravel()]))
    f32 = ax.asarray(b.astype(np.float32))
    assert_same(ax.concat([x, f32]), np.concatenate([a, b.astype(np.float32)]))  # promoted


def test_concat_errors(executor):
    x, y = ax.asarray(_host((2, 3))), ax.asarray(_host((2, 4)))
    with pytest.raises(ValueError, match="concat"):
        ax.concat([x, y])
    with pytest.raises((ValueError, IndexError), match="concat"):
        ax.concat([x, x], axis=2)
    with pytest.raises(ValueError, match="concat"):
        ax.concat([ax.asarray(1.0), ax.asarray(2.0)])
    with ax.strict():
        with pytest.raises(TypeError, match="concat"):
            ax.concat([x, ax.asarray(np.ones((1, 3), np.int64))])


# -- finfo and dtypes() ----------------------------------------------------------------------------

def test_finfo_values_and_errors():
    for dt, want in [(ax.float64, np.finfo(np.float64)), (ax.float32, np.finfo(np.float32)),
                     (ax.complex64, np.finfo(np.float32))]:
        f = ax.finfo(dt)
        assert (f.bits, f.eps, f.max, f.min, f.smallest_normal) == (
            want.bits, float(want.eps), float(want.max), float(want.min), float(want.smallest_normal))
        assert f is ax.finfo(dt)  # frozen: one object per dtype
    assert ax.finfo(ax.complex128).dtype == ax.float64
    assert ax.finfo(ax.asarray(np.ones(2, np.float32))).dtype == ax.float32
    with pytest.raises(TypeError, match="finfo"):
        ax.finfo(ax.int32)
    with pytest.raises(TypeError, match="finfo"):
        ax.finfo("float64")
    with pytest.raises(Exception):
        ax.finfo(ax.float64).eps = 1.0


def test_dtypes_answers_are_fresh_dicts():
    info = ax.__array_namespace_info__()
    first = info.dtypes()
    assert first["float64"] == ax.float64 and "int8" in first and len(first) == 13
    first.clear()
    assert info.dtypes() == info.dtypes() and len(info.dtypes()) == 13
    real = info.dtypes(kind="real floating")
    assert real == {"float32": ax.float32, "float64": ax.float64}
    real["x"] = 1
    assert info.dtypes(kind="real floating") == {"float32": ax.float32, "float64": ax.float64}
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {"bool", "complex64", "complex128"}
    with pytest.raises(ValueError, match="dtypes"):
        info.dtypes(kind="floating")
    with pytest.raises(ValueError, match="dtypes"):
        info.dtypes(kind=("bool", "nope"))
    with pytest.raises((TypeError, ValueError)):
        info.dtypes(kind=["bool"])
