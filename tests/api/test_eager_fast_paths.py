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


# -- the single-frame fast paths: elementwise functions, their operators, matmul, sum, reshape, x[a:b] ----
# (api/_fast_paths.py and the functions' own): what the checked paths give, errors included

def test_fast_functions_and_operators_match_numpy(executor):
    a, b = _host(8, 1), _host(8, 2) + 3.0
    x, y = ax.asarray(a), ax.asarray(b)
    for got, want in [(ax.add(x, y), a + b), (x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b),
                      (x // y, a // b), (x % y, a % b), (x == y, a == b), (x != x, a != a), (x < y, a < b),
                      (x <= y, a <= b), (x > y, a > b), (x >= y, a >= b), (x * 2.0, a * 2.0), (x + 1, a + 1),
                      (ax.exp(x), np.exp(a)), (ax.sin(x), np.sin(a)), (ax.multiply(x, 0.5), a * 0.5),
                      (x + ax.asarray(a[:1]), a + a[:1]),
                      (x + ax.asarray(b.astype(np.float32)), a + b.astype(np.float32))]:
        assert_same(got, want)
    i, j = np.arange(8), np.arange(1, 9)[::-1].copy()
    xi, xj = ax.asarray(i), ax.asarray(j)
    for got, want in [(xi & xj, i & j), (xi | xj, i | j), (xi ^ xj, i ^ j), (xi << 2, i << 2), (xi >> 1, i >> 1),
                      (xi + xj, i + j), (xi / xj, i / j), (ax.abs(-xi), i), (xi == 3, i == 3)]:
        assert_same(got, want)


def test_fast_paths_errors_name_the_function(executor):
    x, z = ax.asarray(_host(8)), ax.asarray(_host(3))
    with pytest.raises(ValueError, match="add"):
        x + z
    with pytest.raises(ValueError, match="add"):
        ax.add(x, z)
    with pytest.raises(ValueError, match="matmul"):
        ax.matmul(ax.asarray(_host((2, 3))), ax.asarray(_host((2, 3))))
    with pytest.raises(TypeError, match="bitwise_and"):
        x & x
    with pytest.raises(TypeError, match="reshape"):
        ax.reshape(x, (2.0, 4))
    with pytest.raises(ValueError, match="reshape"):
        ax.reshape(x, (3, 3))
    with ax.strict():
        with pytest.raises(TypeError, match="exp"):
            ax.exp(ax.asarray(np.arange(3)))
        with pytest.raises(TypeError):
            x + ax.asarray(np.arange(8))


def test_fast_reductions_reshape_and_slices_match_numpy(executor):
    a = _host((2, 4), 3)
    x = ax.asarray(a)
    assert_same(ax.sum(x), np.sum(a))
    assert ax.sum(x).shape == () and ax.sum(x, axis=1, keepdims=True).shape == (2, 1)
    assert_same(ax.sum(x, axis=-1), np.sum(a, axis=-1))
    assert_same(ax.reshape(x, (4, 2)), a.reshape(4, 2))
    assert_same(ax.reshape(x, (-1,)), a.reshape(-1))
    assert_same(ax.reshape(x, (2, -1, 2)), a.reshape(2, -1, 2))
    assert ax.reshape(x, (2, 4)) is x
    flat = ax.reshape(x, (8,))
    assert_same(flat[1:3], a.reshape(8)[1:3])
    assert_same(flat[::-2], a.reshape(8)[::-2])
    assert_same(flat[5:2], a.reshape(8)[5:2])
    assert_same(x[1:], a[1:])
    m = ax.asarray(_host((4, 4), 4))
    assert_same(m @ m, _host((4, 4), 4) @ _host((4, 4), 4))


def test_fast_slices_and_reshapes_are_views_on_numpy():
    with ax.use_executor("numpy"):
        x = ax.asarray(_host(8))
        for v in (x[1:3], ax.reshape(x, (2, 4))):
            assert np.shares_memory(np.asarray(v), np.asarray(x))


def test_matmul_and_sum_fast_paths_keep_the_narrow_float_rules():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(16, 512)).astype(np.float16)
    b = rng.normal(size=(512, 16)).astype(np.float16)
    with ax.use_executor("numpy"):
        x, y = ax.asarray(a), ax.asarray(b)
        wide = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)  # accumulated in float32
        for _ in range(2):  # before and after a float64 product (the unwrapped-function cache)
            assert_same(ax.matmul(x, y), wide)
            assert_same(x @ y, wide)
            f = ax.asarray(a.astype(np.float64))
            assert_same(f @ ax.asarray(b.astype(np.float64)), a.astype(np.float64) @ b.astype(np.float64))
        ones = ax.asarray(np.ones(4096, np.float16))
        assert float(ax.sum(ones)) == 4096.0 and ax.sum(ones).dtype == ax.float16


def test_fast_paths_defer_to_transforms_and_lazy_scopes():
    a, b = _host(8, 1), _host(8, 2)
    with ax.use_executor("numpy"):
        x, y = ax.asarray(a), ax.asarray(b)
        assert_same(ax.jit(lambda p, q: ax.exp(p) * q - 1.0 + p[1:3].sum() + ax.reshape(p, (2, 4))[0, 0])(x, y),
                    np.exp(a) * b - 1.0 + a[1:3].sum() + a[0])
        g = ax.grad(lambda p: ax.sum(ax.exp(p) * y + p * 2.0))(x)
        assert_same(g, np.exp(a) * b + 2.0)
        assert_same(ax.vmap(lambda r: r @ r)(ax.asarray(_host((3, 2, 2)))),
                    np.matmul(_host((3, 2, 2)), _host((3, 2, 2))))
        with ax.lazy():
            z = (x + y) * 2.0 - ax.sin(x)
        assert_same(z, (a + b) * 2.0 - np.sin(a))


def test_fast_paths_give_results_to_the_eager_hook(monkeypatch):
    from arrayx.core import primitives as prims

    seen = []

    def hook(prim, ex, bufs, params, out):
        seen.append(prim.name)
        return out

    with ax.use_executor("numpy"):
        x = ax.asarray(_host(8))
        m, mt = ax.reshape(x, (2, 4)), ax.reshape(x, (4, 2))
        monkeypatch.setattr(prims, "eager_hook", hook)
        x + x, ax.add(x, x), x * 2.0, ax.exp(x), ax.sum(x), ax.reshape(x, (4, 2)), m @ mt, x[1:3]
    assert seen[:7] == ["add", "add", "multiply", "exp", "sum", "reshape", "matmul"]
    assert len(seen) == 8  # and the slice, through indexing's sharding rule
