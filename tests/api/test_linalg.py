"""Linear algebra: main-namespace functions and the ``linalg`` extension, against NumPy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import arrayx as xp
from tests.conftest import assert_matches_numpy, assert_same, to_numpy

FLOATS = [np.float32, np.float64, np.complex64, np.complex128]


def _rotated_on_jax(cases: list) -> list:
    """``executor, *case`` parameters: every case on every executor, except on jax (a new XLA program per
    shape and dtype), where the ci profile takes each row in one dtype, the dtypes in turn (the last field;
    tests/covering.py; every case in the deep profile)."""
    from tests import covering

    return covering.on_executors(cases, ids=lambda v: np.dtype(v).name if isinstance(v, type) else
                                 "-".join(np.dtype(t).name for t in v) if isinstance(v, tuple) and v and isinstance(v[0], type)
                                 else str(v))


def rand(shape, dtype=np.float64, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        out = out + 1j * rng.standard_normal(shape)
    return out.astype(dtype)


def spd(n, dtype=np.float64, batch=(), seed=0) -> np.ndarray:
    """Hermitian positive-definite matrices."""
    a = rand(batch + (n, n), dtype, seed)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def close(actual, expected, dtype=None, factor=100.0):
    """Values agree within a tolerance suited to factorisations of the result's precision."""
    a = to_numpy(actual)
    e = np.asarray(expected)
    dt = np.dtype(dtype or a.dtype)
    eps = np.finfo(dt).eps if dt.kind in "fc" else 0
    np.testing.assert_allclose(a, e, rtol=factor * eps, atol=factor * eps * max(1.0, np.abs(e).max(initial=0)))


# -- main namespace ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "s1, s2",
    [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
     ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((3,), (6, 3, 2)), ((0, 3), (3, 2))],
)
def test_matmul_shapes_and_values(executor, s1, s2):
    a, b = rand(s1), rand(s2, seed=1)
    out = xp.matmul(xp.asarray(a), xp.asarray(b))
    assert out.executor == executor
    assert_same(out, np.matmul(a, b))
    assert_same(xp.asarray(a) @ xp.asarray(b), np.matmul(a, b))


def test_matmul_promotes_with_the_table(executor):
    a = xp.asarray(np.arange(6, dtype=np.int8).reshape(2, 3))
    b = xp.asarray(np.arange(6, dtype=np.int16).reshape(3, 2))
    out = xp.matmul(a, b)
    assert out.dtype == xp.int16
    assert_same(out, (np.arange(6).reshape(2, 3) @ np.arange(6).reshape(3, 2)).astype(np.int16))
    f = xp.matmul(xp.asarray(rand((2, 2), np.float32)), xp.asarray(rand((2, 2), np.complex128)))
    assert f.dtype == xp.complex128


def test_matmul_complex_is_not_conjugated(executor):
    a, b = rand((2, 3), np.complex64), rand((3, 2), np.complex64, seed=1)
    assert_same(xp.asarray(a) @ xp.asarray(b), a @ b)


def test_matmul_errors(executor):
    a = xp.asarray(rand((2, 3)))
    with pytest.raises(ValueError, match="matmul: shapes"):
        xp.matmul(a, a)
    with pytest.raises(ValueError, match="at least one dimension"):
        xp.matmul(xp.asarray(1.0), a)
    with pytest.raises(ValueError, match="broadcast"):
        xp.matmul(xp.asarray(rand((2, 2, 3))), xp.asarray(rand((3, 3, 2))))
    with pytest.raises(TypeError, match="matmul: x1 must have a numeric dtype, got bool"):
        xp.matmul(xp.asarray([True, False]), xp.asarray([True, False]))
    with pytest.raises(TypeError, match="arrayx array"):
        xp.matmul(a, [[1.0], [2.0], [3.0]])


_MATMUL_SHAPES = [(1,), (2,), (1, 1), (2, 3), (3, 2), (1, 2), (2, 1), (2, 2, 3), (1, 3, 2), (0,), (2, 0)]


def test_matmul_refuses_exactly_what_numpy_refuses(executor):
    """Every pair of these shapes: a result where NumPy gives one (same values), ValueError where
    NumPy refuses, at the call, eagerly and through ``@`` (on Dask, (1,) @ (2,) gave an array whose
    read raised: the eager path left the check to the executor)."""
    import itertools

    wrong = []
    for a, b in itertools.product(_MATMUL_SHAPES, repeat=2):
        u, v = np.arange(math.prod(a), dtype=float).reshape(a), np.ones(b)
        try:
            want = np.matmul(u, v)
        except ValueError:
            want = None
        for how, f in (("matmul", xp.matmul), ("@", lambda p, q: p @ q)):
            try:
                out = f(xp.asarray(u), xp.asarray(v))  # refused at the call, not at a later read
            except ValueError:
                got = None
            else:
                got = to_numpy(out)
            if (got is None) != (want is None) or (got is not None and not np.array_equal(got, want)):
                wrong.append((how, a, b, None if got is None else got.shape))
    assert wrong == []


def test_matmul_operators(executor):
    a, b = rand((3, 3)), rand((3, 3), seed=1)
    x = xp.asarray(a.copy())  # (asarray shares a's memory on numpy, and @= writes into it)
    x @= xp.asarray(b)
    assert_same(x, a @ b)
    with pytest.raises(ValueError, match="shape"):
        y = xp.asarray(a)
        y @= xp.asarray(rand((3,)))  # result shape (3,) differs from (3, 3)


def test_matrix_transpose_and_mT(executor):
    a = rand((4, 2, 3))
    assert_same(xp.matrix_transpose(xp.asarray(a)), np.swapaxes(a, -1, -2))
    assert_same(xp.asarray(a).mT, np.swapaxes(a, -1, -2))
    b = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert_same(xp.asarray(b).mT, b.T)
    with pytest.raises(ValueError, match="matrix_transpose: x must have at least 2 dimensions"):
        xp.asarray([1.0, 2.0]).mT


@pytest.mark.parametrize(
    "s1, s2, axes",
    [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4,), 0), ((2, 3, 4), (4, 3), ((1, 2), (1, 0))),
     ((2, 3, 4), (4, 2), ([-1, 0], [0, -1])), ((3, 2), (3, 5), (0, 0))],
)
def test_tensordot(executor, s1, s2, axes):
    a, b = rand(s1), rand(s2, seed=1)
    assert_same(xp.tensordot(xp.asarray(a), xp.asarray(b), axes=axes), np.tensordot(a, b, axes=axes))


def test_tensordot_errors(executor):
    a = xp.asarray(rand((2, 3)))
    with pytest.raises(ValueError, match="contracted axes differ in size"):
        xp.tensordot(a, a, axes=1)
    with pytest.raises(ValueError, match="axes=3"):
        xp.tensordot(a, a, axes=3)
    with pytest.raises(ValueError, match="repeat"):
        xp.tensordot(a, a, axes=((0, 0), (0, 1)))
    with pytest.raises(ValueError, match="out of range"):
        xp.tensordot(a, a, axes=((2,), (0,)))
    with pytest.raises(ValueError, match="names 1 axes of x1 but 2"):
        xp.tensordot(a, a, axes=((0,), (0, 1)))


@pytest.mark.parametrize("executor, s1, s2, axis, dtype", _rotated_on_jax(
    [(*c, d) for d in [np.float64, np.complex128, np.int32]
     for c in [((3,), (3,), -1), ((2, 3), (3,), -1), ((4, 1, 3), (5, 3), -1), ((3, 2), (3, 2), -2),
               ((3, 2), (3, 2), 0), ((2, 4, 3), (4, 3), -2)]]), indirect=["executor"])
def test_vecdot(executor, s1, s2, axis, dtype):
    a, b = rand(s1, dtype), rand(s2, dtype, seed=1)
    if dtype == np.int32:
        a, b = (a * 10).astype(dtype), (b * 10).astype(dtype)
    expected = np.sum(np.conj(a) * b, axis=axis).astype(dtype)
    assert_same(xp.vecdot(xp.asarray(a), xp.asarray(b), axis=axis), expected)


def test_vecdot_conjugates_x1(executor):
    out = xp.linalg.vecdot(xp.asarray([1j, 2j, 3j]), xp.asarray([1, 2j, 3]))
    assert complex(out) == 4 - 10j


def test_vecdot_errors(executor):
    a, b = xp.asarray(rand((2, 3))), xp.asarray(rand((3, 2)))
    with pytest.raises(ValueError, match="contracted axis -1 differs"):
        xp.vecdot(a, b)
    with pytest.raises(ValueError, match=r"\[-1, -1\]"):
        xp.vecdot(a, xp.asarray(rand((3,))), axis=-2)
    with pytest.raises(TypeError, match="vecdot: x1 must have a numeric dtype"):
        xp.vecdot(xp.asarray([True]), xp.asarray([True]))


@settings(max_examples=15, deadline=None)
@given(
    m=st.integers(1, 4), k=st.integers(1, 4), n=st.integers(1, 4),
    batch1=st.sampled_from([(), (1,), (3,), (2, 1)]), batch2=st.sampled_from([(), (1,), (3,), (1, 3)]),
)
def test_matmul_matches_numpy_on_broadcast_stacks(m, k, n, batch1, batch2):
    a, b = rand(batch1 + (m, k)), rand(batch2 + (k, n), seed=2)
    assert_same(xp.matmul(xp.asarray(a), xp.asarray(b)), np.matmul(a, b))


# -- the linalg extension ---------------------------------------------------------------------


def test_extension_names():
    assert set(xp.linalg.__all__) == {
        "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
        "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
        "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm", "eig", "eigvals",
    }
    for name in ("matmul", "matrix_transpose", "tensordot", "vecdot"):
        assert getattr(xp.linalg, name) is getattr(xp, name)
    assert not hasattr(xp, "cholesky")  # extension-only names stay out of the main namespace


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(executor, dtype, upper):
    a = spd(4, dtype, batch=(2,))
    out = xp.linalg.cholesky(xp.asarray(a), upper=upper)
    assert out.dtype == dtype and out.shape == a.shape
    f = to_numpy(out)
    assert np.array_equal(f, np.triu(f) if upper else np.tril(f))
    rebuilt = np.conj(np.swapaxes(f, -1, -2)) @ f if upper else f @ np.conj(np.swapaxes(f, -1, -2))
    close(rebuilt, a, factor=1000)


def test_cholesky_errors(executor):
    with xp.strict(), pytest.raises(TypeError, match="cholesky: x must have a floating-point dtype, got int64; cast"):
        xp.linalg.cholesky(xp.asarray([[1, 0], [0, 1]]))
    with pytest.raises(ValueError, match="square"):
        xp.linalg.cholesky(xp.asarray(rand((2, 3))))
    with pytest.raises(ValueError, match="at least 2-D"):
        xp.linalg.cholesky(xp.asarray(rand((3,))))


@pytest.mark.parametrize(
    "s1, s2, axis", [((3,), (3,), -1), ((4, 3), (3,), -1), ((3, 4), (3, 1), -2), ((2, 1, 3), (5, 3), -1)]
)
def test_cross(executor, s1, s2, axis):
    a, b = rand(s1), rand(s2, seed=1)
    assert_same(xp.linalg.cross(xp.asarray(a), xp.asarray(b), axis=axis), np.cross(a, b, axis=axis))


def test_cross_ints_and_errors(executor):
    a = np.array([1, 2, 3], dtype=np.int16)
    b = np.array([4, 5, 6], dtype=np.int32)
    out = xp.linalg.cross(xp.asarray(a), xp.asarray(b))
    assert out.dtype == xp.int32
    assert_same(out, np.cross(a, b).astype(np.int32))
    with pytest.raises(ValueError, match="size 3"):
        xp.linalg.cross(xp.asarray(rand((2,))), xp.asarray(rand((2,))))
    with pytest.raises(ValueError, match="negative int"):
        xp.linalg.cross(xp.asarray(rand((3,))), xp.asarray(rand((3,))), axis=-2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_det_slogdet_inv(executor, dtype):
    a = rand((3, 4, 4), dtype)
    x = xp.asarray(a)
    d = xp.linalg.det(x)
    assert d.dtype == dtype and d.shape == (3,)
    close(d, np.linalg.det(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)), dtype, 1e3)
    sign, logabsdet = res = xp.linalg.slogdet(x)
    assert type(res).__name__ == "SlogdetResult" and res.sign is sign and res.logabsdet is logabsdet
    assert sign.dtype == dtype and logabsdet.dtype == np.dtype(dtype).type(0).real.dtype
    close(to_numpy(sign) * np.exp(to_numpy(logabsdet)), to_numpy(d), dtype, 1e3)
    inv = xp.linalg.inv(x)
    assert inv.dtype == dtype
    close(to_numpy(inv) @ a, np.broadcast_to(np.eye(4), a.shape), dtype, 1e4)


def test_slogdet_singular(executor):
    sign, logabsdet = xp.linalg.slogdet(xp.asarray(np.zeros((2, 2))))
    assert float(sign) == 0.0 and float(logabsdet) == -math.inf


@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 3, 7])
def test_diagonal_and_trace(executor, offset):
    a = rand((2, 3, 4))
    assert_same(xp.linalg.diagonal(xp.asarray(a), offset=offset), np.diagonal(a, offset, -2, -1))
    assert_same(xp.linalg.trace(xp.asarray(a), offset=offset), np.trace(a, offset, -2, -1))


@pytest.mark.parametrize(
    "dtype, expected",
    [(np.int8, np.int64), (np.int64, np.int64), (np.uint16, np.uint64), (np.float32, np.float32),
     (np.complex64, np.complex64)],
)
def test_trace_dtypes(executor, dtype, expected):
    a = (np.arange(9).reshape(3, 3) * 20).astype(dtype)  # int8 overflows unless accumulated in int64
    out = xp.linalg.trace(xp.asarray(a))
    assert out.dtype == expected
    assert_same(out, np.trace(a.astype(expected)).astype(expected))
    assert xp.linalg.trace(xp.asarray(a), dtype=xp.complex128).dtype == xp.complex128 or dtype == np.complex64


def test_trace_explicit_dtype(executor):
    a = np.arange(4, dtype=np.int32).reshape(2, 2)
    out = xp.linalg.trace(xp.asarray(a), dtype=xp.float32)
    assert out.dtype == xp.float32 and float(out) == 3.0
    with pytest.raises(TypeError, match="trace: x must have a numeric dtype"):
        xp.linalg.trace(xp.asarray([[True]]))


@pytest.mark.parametrize("dtype", FLOATS)
def test_eigh_eigvalsh(executor, dtype):
    a = spd(4, dtype, batch=(2,))
    res = xp.linalg.eigh(xp.asarray(a))
    assert type(res).__name__ == "EighResult"
    w, v = res
    assert res.eigenvalues is w and res.eigenvectors is v
    real = np.zeros((), dtype).real.dtype
    assert w.dtype == real and v.dtype == dtype and w.shape == (2, 4) and v.shape == (2, 4, 4)
    wn, vn = to_numpy(w), to_numpy(v)
    close(vn @ (wn[..., None] * np.conj(np.swapaxes(vn, -1, -2))), a, dtype, 1e3)
    wh = xp.linalg.eigvalsh(xp.asarray(a))
    assert wh.dtype == real
    close(np.sort(to_numpy(wh), -1), np.sort(wn, -1), dtype, 1e3)


@pytest.mark.parametrize("dtype", FLOATS)
def test_eig_eigvals(executor, dtype):
    a = rand((2, 3, 3), dtype)
    cdt = np.result_type(dtype, np.complex64)
    res = xp.linalg.eig(xp.asarray(a))
    assert type(res).__name__ == "EigResult"
    w, v = res
    assert w.dtype == cdt and v.dtype == cdt and w.shape == (2, 3) and v.shape == (2, 3, 3)
    close(a @ to_numpy(v), to_numpy(v) * to_numpy(w)[..., None, :], dtype, 1e3)
    ev = xp.linalg.eigvals(xp.asarray(a))
    assert ev.dtype == cdt
    close(np.sort_complex(to_numpy(ev).ravel()), np.sort_complex(to_numpy(w).ravel()), dtype, 1e3)


def test_eig_of_real_spectrum_is_complex(executor):
    w, v = xp.linalg.eig(xp.asarray(np.diag([1.0, 2.0]).astype(np.float32)))
    assert w.dtype == xp.complex64 and v.dtype == xp.complex64
    assert xp.linalg.eigvals(xp.asarray(np.eye(2))).dtype == xp.complex128


@pytest.mark.parametrize("executor, ord, keepdims, dtype", _rotated_on_jax(
    [(o, k, d) for d in [np.float32, np.complex128] for o in ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]
     for k in [False, True]]), indirect=["executor"])
def test_matrix_norm(executor, ord, keepdims, dtype):
    a = rand((2, 3, 4), dtype)
    out = xp.linalg.matrix_norm(xp.asarray(a), ord=ord, keepdims=keepdims)
    expected = np.linalg.norm(a, ord=ord, axis=(-2, -1), keepdims=keepdims)
    real = np.zeros((), dtype).real.dtype
    assert out.dtype == real and out.shape == expected.shape
    close(out, expected, real, 100)


def test_matrix_norm_errors(executor):
    with pytest.raises(ValueError, match="matrix_norm: ord must be one of"):
        xp.linalg.matrix_norm(xp.asarray(rand((2, 2))), ord=3)
    with pytest.raises(ValueError, match="ord must be one of"):
        xp.linalg.matrix_norm(xp.asarray(rand((2, 2))), ord="max")


@pytest.mark.parametrize("executor, n, dtype", _rotated_on_jax(
    [(n, d) for d in [np.float32, np.float64, np.complex128] for n in [-3, -1, 0, 1, 2, 5, 8]]), indirect=["executor"])
def test_matrix_power(executor, n, dtype):
    a = (rand((2, 3, 3), dtype) + 2 * np.eye(3)).astype(dtype)
    out = xp.linalg.matrix_power(xp.asarray(a), n)
    assert out.dtype == dtype and out.shape == a.shape
    close(out, np.linalg.matrix_power(a.astype(np.result_type(dtype, np.float64)), n), dtype, 1e3)


def test_matrix_power_errors(executor):
    with pytest.raises(TypeError, match="matrix_power: n must be an int, got float"):
        xp.linalg.matrix_power(xp.asarray(rand((2, 2))), 2.0)
    with xp.strict(), pytest.raises(TypeError, match="floating-point"):
        xp.linalg.matrix_power(xp.asarray([[1, 2], [3, 4]]), 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_matrix_rank(executor, dtype):
    a = rand((3, 5, 2), dtype)
    low = (a @ np.conj(np.swapaxes(a, -1, -2))).astype(dtype)  # 5x5 of rank 2
    out = xp.linalg.matrix_rank(xp.asarray(low))
    assert out.dtype == xp.int64 and out.shape == (3,)
    assert_same(out, np.full(3, 2, dtype=np.int64))
    full = xp.linalg.matrix_rank(xp.asarray(rand((4, 6), dtype)))
    assert int(full) == 4


def test_matrix_rank_rtol(executor):
    s = np.array([[10.0, 1.0, 0.1], [10.0, 5.0, 2.0]])
    m = np.stack([np.diag(r) for r in s])
    x = xp.asarray(m)
    assert_same(xp.linalg.matrix_rank(x, rtol=0.005), np.array([3, 3]))
    assert_same(xp.linalg.matrix_rank(x, rtol=0.05), np.array([2, 3]))
    assert_same(xp.linalg.matrix_rank(x, rtol=xp.asarray([0.5, 0.3])), np.array([1, 2]))
    with pytest.raises(TypeError, match="rtol must have a real floating-point dtype"):
        xp.linalg.matrix_rank(x, rtol=xp.asarray([1, 2]))


def test_outer(executor):
    a = np.arange(3, dtype=np.int8)
    b = rand((4,), np.float32)
    out = xp.linalg.outer(xp.asarray(a), xp.asarray(b))
    assert out.dtype == xp.float32
    assert_same(out, np.outer(a, b).astype(np.float32))
    with pytest.raises(ValueError, match="outer: x1 and x2 must be 1-D"):
        xp.linalg.outer(xp.asarray(rand((2, 2))), xp.asarray(b))


@pytest.mark.parametrize("executor, shape, dtype", _rotated_on_jax(
    [(shape, d) for d in [np.float32, np.float64, np.complex128] for shape in [(4, 3), (3, 4), (2, 3, 3), (2, 0)]]),
    indirect=["executor"])
def test_pinv(executor, shape, dtype):
    a = rand(shape, dtype)
    out = xp.linalg.pinv(xp.asarray(a))
    assert out.dtype == dtype and out.shape == shape[:-2] + (shape[-1], shape[-2])
    close(out, np.linalg.pinv(a), dtype, 1e3)


def test_pinv_rtol_drops_small_singular_values(executor):
    a = np.diag([4.0, 1e-3])
    assert_same(xp.linalg.pinv(xp.asarray(a), rtol=1e-2), np.diag([0.25, 0.0]))
    assert_same(xp.linalg.pinv(xp.asarray(a), rtol=xp.asarray(1e-4)), np.diag([0.25, 1e3]))
    assert_same(xp.linalg.pinv(xp.asarray(np.zeros((2, 3)))), np.zeros((3, 2)))


@pytest.mark.parametrize("executor, shape, mode, dtype", _rotated_on_jax(
    [(shape, mode, d) for d in FLOATS for mode in ["reduced", "complete"] for shape in [(5, 3), (3, 5), (2, 4, 4)]]),
    indirect=["executor"])
def test_qr(executor, shape, mode, dtype):
    a = rand(shape, dtype)
    res = xp.linalg.qr(xp.asarray(a), mode=mode)
    assert type(res).__name__ == "QRResult" and res[0] is res.Q and res[1] is res.R
    q, r = map(to_numpy, res)
    m, n = shape[-2:]
    k = min(m, n) if mode == "reduced" else m
    assert q.shape == shape[:-2] + (m, k) and r.shape == shape[:-2] + (k, n)
    assert q.dtype == dtype and r.dtype == dtype
    assert np.array_equal(r, np.triu(r))
    close(q @ r, a, dtype, 1e3)


def test_qr_mode_error(executor):
    with pytest.raises(ValueError, match="qr: mode must be 'reduced' or 'complete', got 'r'"):
        xp.linalg.qr(xp.asarray(rand((2, 2))), mode="r")


@pytest.mark.parametrize("executor, s1, s2, dtypes", _rotated_on_jax(
    [(s1, s2, d) for d in [(np.float64, np.float64), (np.float32, np.float32), (np.float32, np.complex128)]
     for s1, s2 in [((3, 3), (3,)), ((2, 3, 3), (3,)), ((3, 3), (3, 2)), ((2, 1, 3, 3), (4, 3, 2)), ((3, 3), (5, 3, 1))]]),
    indirect=["executor"])
def test_solve(executor, s1, s2, dtypes):
    a = (rand(s1, dtypes[0]) + 3 * np.eye(3)).astype(dtypes[0])
    b = rand(s2, dtypes[1], seed=1)
    out = xp.linalg.solve(xp.asarray(a), xp.asarray(b))
    dt = np.result_type(*dtypes)
    expected_shape = s1[:-2] + s2 if len(s2) == 1 else np.broadcast_shapes(s1[:-2], s2[:-2]) + s2[-2:]
    assert out.dtype == dt and out.shape == expected_shape
    xo = to_numpy(out)
    rebuilt = np.matmul(a, xo[..., None])[..., 0] if len(s2) == 1 else np.matmul(a, xo)
    close(rebuilt, np.broadcast_to(b, rebuilt.shape), dt, 1e3)


def test_solve_errors(executor):
    a = xp.asarray(rand((3, 3)))
    with pytest.raises(ValueError, match="solve: x2 of shape"):
        xp.linalg.solve(a, xp.asarray(rand((2,))))
    with pytest.raises(ValueError, match=r"\(\.\.\., 3, K\)"):
        xp.linalg.solve(a, xp.asarray(rand((2, 2))))
    with xp.strict(), pytest.raises(TypeError, match="solve: x2 must have a floating-point dtype, got int64"):
        xp.linalg.solve(a, xp.asarray([1, 2, 3]))


@pytest.mark.parametrize("executor, shape, full, dtype", _rotated_on_jax(
    [(shape, full, d) for d in FLOATS for full in [True, False] for shape in [(4, 3), (3, 4), (2, 3, 3)]]),
    indirect=["executor"])
def test_svd_svdvals(executor, shape, full, dtype):
    a = rand(shape, dtype)
    res = xp.linalg.svd(xp.asarray(a), full_matrices=full)
    assert type(res).__name__ == "SVDResult" and res.U is res[0] and res.S is res[1] and res.Vh is res[2]
    u, s, vh = map(to_numpy, res)
    m, n = shape[-2:]
    k = min(m, n)
    real = np.zeros((), dtype).real.dtype
    assert u.shape == shape[:-2] + ((m, m) if full else (m, k)) and u.dtype == dtype
    assert vh.shape == shape[:-2] + ((n, n) if full else (k, n)) and vh.dtype == dtype
    assert s.shape == shape[:-2] + (k,) and s.dtype == real
    assert np.all(np.diff(s, axis=-1) <= 0)
    close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 1e3)
    sv = xp.linalg.svdvals(xp.asarray(a))
    assert sv.dtype == real
    close(sv, s, real, 1e3)


_NORM_ORDS = [2, 1, 0, -1, -2, math.inf, -math.inf, 3, 0.5, -1.5]
_NORM_AXES = [(None, False), (0, True), (-1, False), ((0, 2), True), ((2, 0, 1), False), (None, True)]


def _norm_axes(executor: str, ord) -> list:
    """The (axis, keepdims) cases of ``ord``: all of them, except on the jax executor in the ci profile
    (a new XLA program per ord and axes there), where each ord takes two of the six in turn along the
    ords (every ord and every axes case still runs on jax); the deep profile all."""
    from conformance import profile

    if executor != "jax" or not profile.current().sampled:
        return _NORM_AXES
    i = _NORM_ORDS.index(ord)
    return [c for j, c in enumerate(_NORM_AXES) if j % 3 == i % 3]


@pytest.mark.parametrize("ord", _NORM_ORDS)
def test_vector_norm(executor, ord):
    a = rand((2, 3, 4))
    for axis, keepdims in _norm_axes(executor, ord):
        out = xp.linalg.vector_norm(xp.asarray(a), axis=axis, keepdims=keepdims, ord=ord)
        expected = np.linalg.vector_norm(a, axis=axis, keepdims=keepdims, ord=ord)
        assert out.shape == expected.shape
        close(out, expected, np.float64, 100)


@pytest.mark.parametrize("dtype, real", [(np.float32, np.float32), (np.complex64, np.float32), (np.complex128, np.float64)])
def test_vector_norm_dtypes(executor, dtype, real):
    a = rand((5,), dtype)
    for ord in (2, 3.5, 0, math.inf):
        out = xp.linalg.vector_norm(xp.asarray(a), ord=ord)
        assert out.dtype == real
        close(out, np.linalg.vector_norm(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), ord=ord), real, 100)


def test_vector_norm_errors(executor):
    with xp.strict(), pytest.raises(TypeError, match="vector_norm: x must have a floating-point dtype, got int64"):
        xp.linalg.vector_norm(xp.asarray([1, 2]))
    with pytest.raises(TypeError, match="ord must be an int or a float"):
        xp.linalg.vector_norm(xp.asarray([1.0]), ord="fro")
    with pytest.raises(ValueError, match="repeated"):
        xp.linalg.vector_norm(xp.asarray(rand((2, 2))), axis=(0, -2))


@pytest.mark.parametrize(
    "fname", ["det", "inv", "eigh", "eigvalsh", "eig", "eigvals", "slogdet", "svd", "svdvals", "qr", "pinv",
              "matrix_norm", "cholesky"],  # matrix_rank takes integers in both modes, as array-api-strict
)
def test_floating_point_required(executor, fname):
    # strict mode only: the default mode computes integer input in float64 (tests/api/test_scalars_and_ints.py)
    with xp.strict(), pytest.raises(TypeError, match=f"{fname}: x must have a floating-point dtype, got int32"):
        getattr(xp.linalg, fname)(xp.asarray(np.eye(2, dtype=np.int32)))


def test_numpy_scalars_as_static_arguments(executor):
    x = xp.asarray(np.arange(4.0))
    assert float(xp.linalg.vector_norm(x, ord=np.int64(1))) == 6.0
    assert float(xp.linalg.vector_norm(x, ord=np.float32(np.inf))) == 3.0
    assert_same(xp.vecdot(x, x, axis=np.int64(-1)), np.asarray(14.0))
    assert_same(xp.linalg.matrix_power(xp.asarray(np.eye(2)), np.int32(3)), np.eye(2))
    assert int(xp.linalg.matrix_rank(xp.asarray(np.diag([1.0, 1e-3])), rtol=np.float32(0.01))) == 1


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.float32])
def test_trace_result_has_the_dtype_asked_for(executor, dtype):
    """dtype= is the result dtype too: int8 sums wrap in int8 (100 + 100 = -56), not widen to int64."""
    a = np.full((2, 3, 3), 100, dtype)
    out = xp.linalg.trace(xp.asarray(a), dtype=dtype)
    assert_same(out, np.trace(a, axis1=-2, axis2=-1, dtype=dtype))


# -- integer contractions and linalg over several Dask chunks, size-0 and strided operands --------

@pytest.mark.dask_chunks(2, 1)
@pytest.mark.parametrize("fn,shapes,want", [
    (xp.matmul, ((1, 4), (4,)), [-112]),
    (xp.linalg.matmul, ((2, 4), (4, 3)), [[-112] * 3] * 2),
    (xp.vecdot, ((4,), (4,)), -112),
    (xp.linalg.vecdot, ((3, 4), (4,)), [-112] * 3),
    (lambda a, b: xp.tensordot(a, b, axes=1), ((1, 4), (4,)), [-112]),
])
def test_integer_contractions_wrap_in_their_dtype(executor, fn, shapes, want):
    a = xp.full(shapes[0], 100, dtype=xp.int8)  # 4 * 100 = 400 wraps to -112 in int8
    b = xp.ones(shapes[1], dtype=xp.int8)
    out = assert_matches_numpy(fn, a, b)
    assert out.dtype == xp.int8 and np.asarray(out).tolist() == want


@pytest.mark.dask_chunks(2, 1)
@pytest.mark.parametrize("dtype", [np.dtype("uint8"), np.dtype("int16"), np.dtype("uint32")], ids=str)
def test_integer_matmul_over_several_chunks_and_empty_axes(executor, dtype):
    a = xp.asarray(np.arange(30).reshape(5, 6).astype(dtype) * 50)
    b = xp.asarray((np.arange(24).reshape(6, 4) % 7).astype(dtype))
    out = assert_matches_numpy(xp.matmul, a, b)
    assert out.dtype == np.dtype(dtype)
    assert_same(out, (np.arange(30).reshape(5, 6).astype(dtype) * 50) @ (np.arange(24).reshape(6, 4) % 7).astype(dtype))
    e = assert_matches_numpy(xp.matmul, xp.zeros((2, 0), dtype=dtype), xp.zeros((0, 3), dtype=dtype))
    assert e.dtype == np.dtype(dtype) and np.asarray(e).tolist() == [[0, 0, 0]] * 2
    assert assert_matches_numpy(xp.vecdot, xp.zeros((3, 0), dtype=dtype), xp.zeros(0, dtype=dtype)).shape == (3,)


@pytest.mark.dask_chunks(2, 1)
def test_size_zero_linalg_keeps_a_solvable_operand(executor):
    a = xp.asarray([[2.0, 0.0], [1.0, 3.0]])
    assert assert_matches_numpy(xp.linalg.solve, a, xp.zeros((2, 0))).shape == (2, 0)
    assert assert_matches_numpy(xp.linalg.inv, xp.zeros((2, 0, 0))).shape == (2, 0, 0)
    assert assert_matches_numpy(xp.linalg.cross, xp.zeros((0, 3)), xp.zeros((0, 3))).shape == (0, 3)


# -- linalg on strided input -----------------------------------------------------------------

@pytest.mark.dask_chunks(2, 1)
@pytest.mark.parametrize("name", ["inv", "eigh", "eigvalsh", "slogdet", "cholesky", "det", "svdvals"])
def test_linalg_on_strided_input(executor, name):
    base_ = np.array([[4.0, 1.0, 0.0, 0.5], [1.0, 3.0, 0.2, 0.0], [0.0, 0.2, 2.0, 0.1], [0.5, 0.0, 0.1, 5.0]])
    x = xp.asarray(np.repeat(base_, 2, axis=0))[::2]  # rows chunked unlike columns on Dask
    fn = getattr(xp.linalg, name)
    got = fn(x)
    want = on_numpy_np(name, base_)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want):
        np.testing.assert_allclose(np.abs(np.asarray(g)) if name == "eigh" else np.asarray(g), w, rtol=1e-10, atol=1e-12)


def on_numpy_np(name, a):
    with xp.use_executor("numpy"):
        out = getattr(xp.linalg, name)(xp.asarray(a))
    out = out if isinstance(out, tuple) else (out,)
    return [np.abs(np.asarray(o)) if name == "eigh" else np.asarray(o) for o in out]
