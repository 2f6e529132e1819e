"""The standard's array object on every executor: attributes, every operator (forward, reflected,
in-place), conversions, DLPack, repr, to_device, indexing, ``__setitem__`` and ``.at[...]``.

Values are checked against NumPy running the same Python expression on the same host data.
"""
from __future__ import annotations

import operator

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_same

RNG = np.random.default_rng(20251212)
A64 = RNG.standard_normal((3, 4))
B64 = RNG.uniform(0.5, 2.0, (3, 4)) * RNG.choice([-1.0, 1.0], (3, 4))   # nonzero divisors
I32 = RNG.integers(-20, 20, (3, 4)).astype(np.int32)
J32 = RNG.integers(1, 6, (3, 4)).astype(np.int32)                      # positive: divisors, shifts
BOOL = RNG.random((3, 4)) < 0.5


def ax(a):
    """``a`` as an arrayx array on the current executor."""
    return xp.asarray(np.array(a, copy=True))  # a fresh host copy: writes never reach the module's data


# -- attributes --------------------------------------------------------------------------------


def test_attributes(executor: str) -> None:
    x = ax(np.zeros((2, 3, 4), dtype=np.float32))
    assert x.dtype == xp.float32
    assert x.shape == (2, 3, 4) and isinstance(x.shape, tuple)
    assert x.ndim == 3 and x.size == 24
    assert x.device == xp.__array_namespace_info__().default_device()
    assert x.device.executor == executor
    assert x.executor == executor
    y = ax(A64)
    assert_same(y.T, A64.T)
    assert_same(x.mT, np.swapaxes(np.zeros((2, 3, 4), np.float32), -1, -2))
    assert ax(np.float64(3.0)).shape == () and ax(np.float64(3.0)).size == 1


def test_T_requires_2d(executor: str) -> None:
    with pytest.raises(ValueError, match="2-D"):
        ax(np.zeros(3)).T


def test_not_constructible_and_unhashable() -> None:
    with pytest.raises(TypeError, match="asarray"):
        xp.Array(np.zeros(2))
    with pytest.raises(TypeError):
        hash(xp.zeros(2))


# -- operators -------------------------------------------------------------------------------------

# name -> (operator, in-place operator, left host operand, right host operand, python scalar)
BINARY = {
    "add": (operator.add, operator.iadd, A64, B64, 1.5),
    "sub": (operator.sub, operator.isub, A64, B64, 2.0),
    "mul": (operator.mul, operator.imul, I32, J32, 3),
    "truediv": (operator.truediv, operator.itruediv, A64, B64, 4.0),
    "floordiv": (operator.floordiv, operator.ifloordiv, I32, J32, 3),
    "mod": (operator.mod, operator.imod, A64, B64, 0.75),
    "pow": (operator.pow, operator.ipow, np.abs(A64) + 0.5, B64, 2.0),
    "and": (operator.and_, operator.iand, I32, J32, 6),
    "or": (operator.or_, operator.ior, BOOL, ~BOOL, True),
    "xor": (operator.xor, operator.ixor, I32, J32, 5),
    "lshift": (operator.lshift, operator.ilshift, I32, J32, 2),
    "rshift": (operator.rshift, operator.irshift, I32, J32, 1),
}
COMPARISONS = {
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne,
}
# Python scalars on the left also exercise the reflected methods (__radd__, __rlshift__, ...)
REFLECTED_SCALAR = {"lshift": 3, "rshift": 64, "pow": 1.5}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_operator(name: str, executor: str) -> None:
    op, _, a, b, _ = BINARY[name]
    assert_same(op(ax(a), ax(b)), op(a, b))


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_operator_with_python_scalar(name: str, executor: str) -> None:
    op, _, a, _, s = BINARY[name]
    assert_same(op(ax(a), s), op(a, s))


@pytest.mark.parametrize("name", list(BINARY))
def test_reflected_operator(name: str, executor: str) -> None:
    op, _, a, b, s = BINARY[name]
    s = REFLECTED_SCALAR.get(name, s)
    rhs = b if name in ("truediv", "floordiv", "mod", "pow") else a  # nonzero / positive right operands
    if name == "pow":
        rhs = np.abs(b)
    got = op(s, ax(rhs))
    assert isinstance(got, xp.Array)
    assert_same(got, op(s, rhs))
    # and the method itself
    method = getattr(ax(rhs), f"__r{name}__")
    assert_same(method(s), op(s, rhs))


@pytest.mark.parametrize("name", list(BINARY))
def test_inplace_operator(name: str, executor: str) -> None:
    _, iop, a, b, s = BINARY[name]
    x = ax(a)
    other = ax(a)                         # an independent array with the same values
    same_object = x
    x = iop(x, ax(b))
    assert x is same_object               # in place: the same Array object
    assert_same(x, iop(a.copy(), b))
    assert_same(other, a)                 # other arrays are untouched
    y = iop(ax(a), s)
    assert_same(y, iop(a.copy(), s))


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparison_operator(name: str, executor: str) -> None:
    op = COMPARISONS[name]
    x = ax(np.round(A64))
    y = ax(np.round(B64))
    assert_same(op(x, y), op(np.round(A64), np.round(B64)))
    assert_same(op(x, 0.0), op(np.round(A64), 0.0))
    assert_same(op(1.0, x), op(1.0, np.round(A64)))   # reflected via the swapped comparison
    assert op(x, y).dtype == xp.bool


def test_unary_operators(executor: str) -> None:
    assert_same(-ax(A64), -A64)
    assert_same(+ax(A64), +A64)
    assert_same(abs(ax(A64)), abs(A64))
    assert_same(~ax(I32), ~I32)
    assert_same(~ax(BOOL), ~BOOL)
    for m in ("__neg__", "__pos__", "__abs__"):
        assert_same(getattr(ax(I32), m)(), getattr(I32, m)())
    assert_same(ax(I32).__invert__(), ~I32)


def test_matmul_operators(executor: str) -> None:
    a, b = A64, RNG.standard_normal((4, 4))
    assert_same(ax(a) @ ax(b), a @ b)
    assert_same(ax(a).__matmul__(ax(b)), a @ b)
    assert_same(ax(b).__rmatmul__(ax(a)), a @ b)
    x = ax(a)
    ref = x
    x @= ax(b)
    assert x is ref
    assert_same(x, a @ b)


def test_numpy_on_the_left_defers_to_arrayx(executor: str) -> None:
    got = np.ones((3, 4)) + ax(A64)
    assert isinstance(got, xp.Array) and got.executor == executor
    assert_same(got, 1.0 + A64)
    got = np.float64(2.0) * ax(A64)
    assert isinstance(got, xp.Array)
    assert_same(got, 2.0 * A64)


def test_inplace_cannot_change_dtype_or_shape(executor: str) -> None:
    x = ax(I32)
    with pytest.raises(TypeError, match="int32"):
        x += 1.5
    with pytest.raises(TypeError, match="float32"):
        y = ax(A64.astype(np.float32))
        y += ax(A64)
    with pytest.raises(ValueError, match="shape"):
        z = ax(np.ones(4))
        z += ax(np.ones((3, 4)))
    assert_same(x, I32)  # unchanged by the failed update


def test_inplace_broadcasts_the_right_operand(executor: str) -> None:
    x = ax(A64)
    x += ax(B64[0])
    assert_same(x, A64 + B64[0])


# executor -> whether its buffers are written in place (then NumPy arrays exported from them see
# in-place updates; arrayx views see them on every executor)
WRITES_IN_PLACE = {"numpy": True, "numba": True, "cupy": True, "jax": False, "dask": False}


@pytest.mark.parametrize("name", list(BINARY))
def test_inplace_operator_on_a_view_writes_the_base(name: str, executor: str) -> None:
    _, iop, left, right, _ = BINARY[name]
    host = np.array(left, copy=True)
    x = ax(left)
    v = x[:2]
    v = iop(v, ax(right[:2]))
    iop(host[:2], right[:2])  # NumPy: the view's update lands in the base
    assert_same(v, host[:2])
    assert_same(x, host)  # on every executor: views of JAX/Dask arrays are linked to their base


def test_inplace_and_setitem_on_views_agree(executor: str) -> None:
    x, y = ax(A64), ax(A64)
    v, w = x[:2], y[:2]
    v += 10.0
    w[...] = w + 10.0
    assert_same(v, A64[:2] + 10.0)
    assert_same(w, A64[:2] + 10.0)
    assert_same(x, y)  # the base sees both kinds of update, or neither
    want = A64.copy()
    want[:2] += 10.0
    assert_same(x, want)
    u = x[:, 1]  # a strided view
    u *= 0.0
    want[:, 1] = 0.0
    assert_same(x, want)


def test_inplace_reaches_every_holder_of_the_buffer(executor: str) -> None:
    x = ax(A64)
    host = np.asarray(x)  # a NumPy view of the buffer (a host copy on jax/dask)
    view = x[1:]
    x += 1.0
    assert_same(x, A64 + 1.0)
    assert_same(view, A64[1:] + 1.0)
    if WRITES_IN_PLACE[executor] and executor != "cupy":
        np.testing.assert_array_equal(host, A64 + 1.0)
    fresh = ax(A64)
    fresh *= 2.0  # nothing else sees this buffer: rebinding is allowed, the value is what counts
    assert_same(fresh, A64 * 2.0)


def test_inplace_on_a_read_only_view_rebinds(executor: str) -> None:
    base = ax(A64[0])
    b = xp.broadcast_to(base, (3, 4))  # read-only on NumPy: rebound instead of written
    b += 1.0
    assert_same(b, np.broadcast_to(A64[0], (3, 4)) + 1.0)
    assert_same(base, A64[0])


def test_inplace_on_a_view_keeps_the_dtype_rule(executor: str) -> None:
    x = ax(I32)
    v = x[0]
    with pytest.raises(TypeError, match=r"int32.*in-place operators cannot change an array's dtype"):
        v += 0.5
    v += 3
    want = I32.copy()
    want[0] += 3
    assert_same(x, want)


def test_operator_promotion_follows_the_standard(executor: str) -> None:
    assert (ax(I32.astype(np.int8)) + ax(I32.astype(np.int16))).dtype == xp.int16
    assert (ax(A64.astype(np.float32)) + 1.5).dtype == xp.float32
    assert (ax(I32) + 1).dtype == xp.int32
    assert (ax(I32) / ax(J32)).dtype == xp.float64        # NumPy 2 on every executor


# -- conversions -------------------------------------------------------------------------------


def test_python_scalar_conversions(executor: str) -> None:
    assert bool(ax(np.array(True))) is True and bool(ax(np.array([0.0]))) is False
    assert int(ax(np.array(7, np.int16))) == 7 and type(int(ax(np.array(7)))) is int
    assert float(ax(np.array(2.5))) == 2.5
    assert complex(ax(np.array(1 + 2j))) == 1 + 2j
    assert operator.index(ax(np.array(3, np.int64))) == 3
    assert [10, 20, 30, 40][ax(np.array(2, np.int32))] == 30       # __index__ in a Python sequence
    assert list(range(10))[ax(np.array(1)):ax(np.array(4))] == [1, 2, 3]
    with pytest.raises(TypeError):
        operator.index(ax(np.array(2.0)))
    with pytest.raises(TypeError):
        bool(ax(np.ones(2)))
    with pytest.raises(TypeError):
        int(ax(np.array(1j)))
    with pytest.raises(TypeError):
        float(ax(np.array(1j)))
    with pytest.raises((ValueError, OverflowError)):
        int(ax(np.array(np.inf)))


def test_array_protocol(executor: str) -> None:
    x = ax(A64)
    h = np.asarray(x)
    assert isinstance(h, np.ndarray)
    np.testing.assert_array_equal(h, A64)
    assert np.asarray(x, dtype=np.float32).dtype == np.float32
    c = x.__array__(copy=True)
    c[0, 0] = 123.0
    assert float(x[0, 0]) == A64[0, 0]                  # a requested copy is a copy
    np.testing.assert_array_equal(np.array(ax(I32)), I32)


def test_dlpack_round_trip_with_numpy(executor: str) -> None:
    x = ax(A64)
    dev = x.__dlpack_device__()
    assert tuple(int(v) for v in dev) == (1, 0)          # kDLCPU, device 0 (all executors here are CPU)
    h = np.from_dlpack(x)
    np.testing.assert_array_equal(h, A64)
    assert h.dtype == np.float64
    back = xp.from_dlpack(h)
    assert back.executor == executor
    assert_same(back, A64)
    capsule = x.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"
    assert_same(xp.from_dlpack(np.asarray(I32)), I32)


def test_dlpack_max_version(executor: str) -> None:
    x = ax(A64)
    capsule = x.__dlpack__(max_version=(1, 0))
    assert type(capsule).__name__ == "PyCapsule"


def test_repr(executor: str) -> None:
    r = repr(ax(np.array([1.5, -2.0], dtype=np.float32)))
    assert r.startswith("Array(") and "1.5" in r and "-2." in r
    assert "float32" in r and executor in r
    assert "int64" in str(ax(np.arange(3)))


def test_format_specs(executor: str) -> None:
    assert f"{ax(np.array(3.14159)):.2f}" == "3.14"
    assert format(ax(np.array(1234.5)), "e") == "1.234500e+03"
    assert f"{ax(np.array(7, np.int32)):>4d}" == "   7"
    assert f"{ax(np.array(True)):}" == str(ax(np.array(True)))
    assert format(ax(np.array(1 + 2j)), ".1f") == "1.0+2.0j"
    assert f"{ax(A64)}" == str(ax(A64))  # no spec: str()
    with pytest.raises(TypeError, match=r"format spec '.2f' applies to 0-d arrays, got shape \(3, 4\)"):
        f"{ax(A64):.2f}"
    with pytest.raises(TypeError, match=r"0-d"):
        format(ax(np.array([1.0])), "e")  # NumPy refuses size-1 1-d arrays too


def test_to_device(executor: str) -> None:
    x = ax(A64)
    same = x.to_device(x.device)
    assert same.executor == executor
    assert_same(same, A64)
    for name in xp.executors():
        moved = x.to_device(name)
        assert moved.executor == name
        assert moved.device.executor == name
        assert_same(moved, A64)
        assert_same(moved.to_device(executor), A64)
    assert x.to_device(x.device, stream=None).executor == executor


def test_namespace_and_len_iter(executor: str) -> None:
    x = ax(A64)
    assert x.__array_namespace__() is xp
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3
    assert_same(rows[1], A64[1])


# -- indexing ------------------------------------------------------------------------------------

KEYS = [
    1, -1, (0, 2), (slice(None), 1), (slice(1, None), slice(None, None, 2)), (Ellipsis, 0),
    (None, 1), (slice(None, None, -1),), (), Ellipsis, (1, Ellipsis, None), (slice(5, 1, -2), -2),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem_basic(key, executor: str) -> None:
    assert_same(ax(A64)[key], A64[key])


def test_getitem_advanced(executor: str) -> None:
    x = ax(A64)
    idx = np.array([2, 0, 2])
    assert_same(x[ax(idx)], A64[idx])
    assert_same(x[ax(idx), ax(np.array([1, 1, 3]))], A64[idx, np.array([1, 1, 3])])
    assert_same(x[ax(A64 > 0)], A64[A64 > 0])
    assert_same(x[ax(np.array([True, False, True]))], A64[np.array([True, False, True])])
    assert_same(ax(np.array(5.0))[()], np.array(5.0)[()])


def test_setitem(executor: str) -> None:
    x = ax(A64)
    ref = x
    h = A64.copy()
    for key, value in [((0, 0), 9.0), ((slice(None), 1), -1.0), ((2,), ax(B64[0])), ((Ellipsis, -1), 4)]:
        x[key] = value
        h[key] = np.asarray(value)
        assert_same(x, h)
    assert x is ref
    m = A64 > 0
    x[ax(m)] = 0.0
    h[m] = 0.0
    assert_same(x, h)
    x[ax(np.array([0, 2]))] = ax(np.array([[1.0, 2, 3, 4], [5, 6, 7, 8]]))
    h[np.array([0, 2])] = np.array([[1.0, 2, 3, 4], [5, 6, 7, 8]])
    assert_same(x, h)


def test_setitem_does_not_touch_other_arrays(executor: str) -> None:
    x = ax(A64)
    y = xp.asarray(x, copy=True)
    x[0] = 0.0
    assert_same(y, A64)


def test_setitem_never_writes_through_to_copied_host_data(executor: str) -> None:
    h = np.arange(4.0)
    x = xp.asarray(h, copy=True)
    x[0] = 100.0
    assert h[0] == 0.0, "asarray(host, copy=True) shared memory with the host array"
    assert float(x[0]) == 100.0


def test_setitem_checks_values(executor: str) -> None:
    x = ax(I32)
    with xp.strict():  # the default mode stores these as NumPy does (tests/api/test_numpy_habits.py)
        with pytest.raises(TypeError):
            x[0, 0] = 1.5
        with pytest.raises(TypeError):
            x[0] = ax(A64[0])                     # float64 values into an int32 array
    assert_same(x, I32)


# -- .at[...] functional updates -------------------------------------------------------------------


def test_at_updates_are_functional(executor: str) -> None:
    x = ax(A64)
    y = x.at[0, 1].set(100.0)
    assert_same(x, A64)                       # x unchanged
    h = A64.copy()
    h[0, 1] = 100.0
    assert_same(y, h)
    assert_same(x.at[1].get(), A64[1])


@pytest.mark.parametrize(
    "op,ufunc",
    [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
     ("min", np.minimum), ("max", np.maximum)],
)
def test_at_repeated_indices_accumulate(op, ufunc, executor: str) -> None:
    base = np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([0, 2, 0, 0, 3])
    vals = np.array([0.5, 4.0, -2.0, 3.0, 2.0])
    want = base.copy()
    ufunc.at(want, idx, vals)                 # unbuffered: every repeat counts
    got = getattr(ax(base).at[ax(idx)], op)(ax(vals))
    assert_same(got, want)


def test_at_add_scalar_on_repeats(executor: str) -> None:
    got = ax(np.zeros(3)).at[ax(np.array([1, 1, 1, 2]))].add(1.0)
    assert_same(got, np.array([0.0, 3.0, 1.0]))


def test_at_set_with_slices_and_masks(executor: str) -> None:
    x = ax(A64)
    h = A64.copy()
    h[:, 2:] = 0.0
    assert_same(x.at[:, 2:].set(0.0), h)
    h = A64.copy()
    h[A64 < 0] = -1.0
    assert_same(x.at[ax(A64 < 0)].set(-1.0), h)


def test_at_power(executor: str) -> None:
    base = np.array([1.0, 2.0, 3.0])
    got = ax(base).at[1].power(3.0)
    assert_same(got, np.array([1.0, 8.0, 3.0]))


# -- repr of arrays NumPy summarises: only the edges move, the text is NumPy's ----------------

@pytest.mark.dask_chunks(2, 1)
@pytest.mark.parametrize("a", [
    np.arange(2000.0).reshape(40, 50) / 7, np.arange(1001), np.linspace(0, 1, 3000).reshape(3, 1000),
    np.arange(5000) % 3 == 0, np.arange(2 * 7 * 200).reshape(2, 7, 200).astype(np.int8),
], ids=["2d-float", "1d-int", "short-axis", "bool", "3d-int8"])
def test_repr_of_summarised_arrays_is_numpys(executor, a):
    text = repr(xp.asarray(a))
    assert text == "Array(" + np.array2string(a, separator=", ", prefix="Array(") + (
        f", dtype={a.dtype}, device={xp.asarray(a).device.executor}:{xp.asarray(a).device.label})")
