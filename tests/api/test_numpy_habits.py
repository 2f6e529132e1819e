"""NumPy's habits in the default mode, refused in strict mode: stores that NumPy casts, NumPy's array
methods (client code calls them on what NumPy functions return for arrayx arrays)."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp


def _host(a):
    return np.asarray(a)


@pytest.mark.parametrize("via", ["setitem", "at"])
def test_stores_cast_as_numpy_does(executor, via):
    with xp.use_executor(executor):
        cases = [
            (np.array([2, 4]), 0, 1.9),  # float into int: truncated toward zero
            (np.array([2, 4]), 1, -2.7),
            (np.array([True, False]), 1, 3),  # any number into bool: its truth value
            (np.array([1, 2], np.int32), 0, np.array(7.8)),  # a float64 array into int32
            (np.array([1.0, 2.0], np.float32), 0, np.array(3.25)),  # float64 into float32
        ]
        for host, i, v in cases:
            x = xp.asarray(host)
            value = xp.asarray(v) if isinstance(v, np.ndarray) else v
            if via == "setitem":
                x[i] = value
                got = x
            else:
                got = x.at[i].set(value)
            want = host.copy()
            want[i] = v
            assert got.dtype == host.dtype
            np.testing.assert_array_equal(_host(got), want)


def test_stores_numpy_refuses_are_refused(executor):
    with xp.use_executor(executor):
        x = xp.asarray([1, 2])
        with pytest.raises(ValueError, match=r"__setitem__: cannot store nan into an int64 array"):
            x[0] = float("nan")
        with pytest.raises(TypeError, match="complex"):
            xp.asarray([1.0, 2.0])[0] = 1 + 2j
        with pytest.raises(TypeError, match="complex128 values into a float64 array"):
            xp.asarray([1.0, 2.0])[0] = xp.asarray(1 + 2j)


def test_strict_mode_refuses_lossy_stores(executor):
    with xp.use_executor(executor), xp.strict():
        x = xp.asarray([2, 4])
        with pytest.raises(TypeError, match="cannot store the Python float 1.1 into an int64 array"):
            x[0] = 1.1
        with pytest.raises(TypeError, match="without losing information"):
            x[0] = xp.asarray(1.5)
        np.testing.assert_array_equal(_host(x), [2, 4])


_A = np.array([[3.0, -1.5, 2.0], [0.5, 4.0, -2.5]])


@pytest.mark.parametrize("call", [
    lambda a: a.astype(np.int8), lambda a: a.astype("float32"), lambda a: a.max(), lambda a: a.min(axis=0),
    lambda a: a.sum(axis=1, keepdims=True), lambda a: a.prod(), lambda a: a.mean(axis=0),
    lambda a: a.std(ddof=1), lambda a: a.var(axis=1), lambda a: (a > 0).any(), lambda a: (a > 0).all(axis=0),
    lambda a: a.argmax(), lambda a: a.argmin(axis=1), lambda a: a.reshape(3, 2), lambda a: a.reshape((6,)),
    lambda a: a.ravel(), lambda a: a.flatten(), lambda a: a.copy(), lambda a: a[None].squeeze(),
    lambda a: a.transpose(), lambda a: a.transpose(1, 0), lambda a: a.cumsum(), lambda a: a.cumprod(axis=1),
    lambda a: a.clip(-1, 1), lambda a: a.round(), lambda a: a.round(1), lambda a: a.conj(),
    lambda a: (a > 0).nonzero(),
])
def test_numpy_methods_match_numpy(executor, call):
    with xp.use_executor(executor):
        got = call(xp.asarray(_A))
    want = call(_A.copy())
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(_host(g), w)
        return
    assert isinstance(got, xp.Array) and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(_host(got), want, rtol=1e-12)


def test_numpy_methods_python_values_and_integer_mean(executor):
    with xp.use_executor(executor):
        a = xp.asarray(_A)
        assert a[0, 1].item() == -1.5 and a.item(0) == 3.0 and a.tolist() == _A.tolist()
        ints = xp.asarray([1, 2, 4])
        assert ints.mean().dtype == np.float64 and float(ints.mean()) == pytest.approx(7 / 3)
        # what SciPy's ndimage does with the arrayx array numpy.where gives back
        out = np.where(xp.asarray([[0, 2], [3, 0]]), 1, 0).astype(np.int8)
        assert out.dtype == np.int8
        np.testing.assert_array_equal(_host(out), [[0, 1], [1, 0]])


def test_numpy_methods_do_not_exist_in_strict_mode(executor):
    with xp.use_executor(executor):
        a = xp.asarray(_A)
        assert hasattr(a, "astype") and hasattr(a, "max")
        with xp.strict():
            assert not hasattr(a, "astype") and not hasattr(a, "max") and not hasattr(a, "reshape")
            with pytest.raises(AttributeError, match="'Array' object has no attribute 'sum' in strict mode"):
                a.sum()
        assert float(a.sum()) == _A.sum()


def test_numpy_methods_under_transforms(executor):
    with xp.use_executor(executor):
        f = xp.jit(lambda a: a.reshape(3, 2).sum(axis=0).max())
        assert float(f(xp.asarray(_A))) == _A.reshape(3, 2).sum(axis=0).max()
        g = xp.grad(lambda a: (a * a).sum())(xp.asarray(_A))
        np.testing.assert_allclose(_host(g), 2 * _A)
