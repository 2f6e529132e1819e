"""The Numba and JAX executors' svd of tall, thin float64 matrices (executors/common/tall_svd.py,
numba/linalg.py, jax/linalg.py): CholeskyQR2 where it is as accurate as LAPACK, LAPACK's gesdd
elsewhere; every case agrees with numpy.linalg.svd to rounding, on both executors."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

import arrayx
from arrayx.core import executor as base
from arrayx.executors.common import tall_svd

EXECUTORS = [pytest.param(name, marks=pytest.mark.skipif(
    not base.get(name).available(), reason=f"executor {name!r} unavailable: {base.get(name).unavailable_reason}"))
    for name in ("numba", "jax")]


@pytest.fixture(params=EXECUTORS)
def taken(request, monkeypatch):
    """Inside ``use_executor`` of each executor: a list of what each CholeskyQR2 attempt decided,
    True (its result used) or False (LAPACK's gesdd ran).  On numba a spy on the attempt; on jax
    (where ``lax.cond`` decides on the device) the ``accurate`` flag of the same pieces, computed
    again for each svd call (the spy called eagerly, so that it sees values; the svd a ``jax.jit``
    program)."""
    seen = []
    if request.param == "numba":
        from arrayx.executors.numba import linalg as nl

        real = nl.cholesky_qr2_svd

        def spy(x):
            got = real(x)
            seen.append(got is not None)
            return got

        monkeypatch.setattr(nl, "cholesky_qr2_svd", spy)
    else:
        import jax

        from arrayx.executors.jax import executor as jex, linalg as jl

        real_svd = jl.svd

        def spy(x, full_matrices=True):
            if tall_svd.applies(tuple(x.shape), x.dtype.name, full_matrices):
                seen.append(bool(jax.jit(jl.cholesky_qr2)(x)[-1]))
            # one program, as the executor's eager mode runs it (op by op, each step compiles its own)
            return jax.jit(real_svd, static_argnums=1)(x, full_matrices)

        ex = base.get("jax")
        monkeypatch.setitem(ex.table, "svd", spy)
        monkeypatch.setattr(ex, "impls", {})
        monkeypatch.setattr(ex, "jit_ops", False)  # the spy sees concrete arrays, not jit's tracers
        assert jex.JaxExecutor.overrides["svd"].raw is real_svd  # (a TPU scales first: scaled_svd)
    with arrayx.use_executor(request.param):
        yield seen


def _svd(x_host, full_matrices=False):
    u, s, vh = arrayx.linalg.svd(arrayx.asarray(x_host), full_matrices=full_matrices)
    return np.asarray(u), np.asarray(s), np.asarray(vh)


_REFERENCES: dict = {}


@pytest.fixture(autouse=True, scope="module")
def _forget_references():
    yield
    _REFERENCES.clear()


def _numpy_svd(x, full_matrices=False):
    """numpy.linalg.svd of ``x``, computed once per matrix for the file (each case runs on both
    executors against the same reference)."""
    key = (x.shape, x.dtype.str, full_matrices, hashlib.sha1(np.ascontiguousarray(x)).digest())
    if key not in _REFERENCES:
        _REFERENCES[key] = np.linalg.svd(x, full_matrices=full_matrices)
    return _REFERENCES[key]


def _agrees(x, rtol=1e-12):
    """The numba executor's svd of ``x`` checked against NumPy's: singular values to ``rtol`` of the
    largest, orthonormal U columns and Vh rows, U S Vh reconstructing x, the same right singular
    vectors up to sign (for well-separated singular values)."""
    u, s, vh = _svd(x)
    wu, ws, wvh = _numpy_svd(x)
    assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape)
    assert u.dtype == s.dtype == vh.dtype == x.dtype
    scale = ws[0] if ws.size and ws[0] > 0 else 1.0
    np.testing.assert_allclose(s, ws, rtol=0, atol=rtol * scale)
    k = s.size
    np.testing.assert_allclose(u.T @ u, np.eye(k), atol=rtol * 100)
    np.testing.assert_allclose(vh @ vh.T, np.eye(k), atol=rtol * 100)
    np.testing.assert_allclose((u * s) @ vh, x, rtol=0, atol=rtol * 100 * np.abs(x).max())
    gaps = np.diff(ws[::-1])[::-1]  # s[i] - s[i+1]
    clear = np.flatnonzero(np.minimum(np.r_[np.inf, gaps], np.r_[gaps, np.inf]) > 1e-3 * scale)
    np.testing.assert_allclose(np.abs(np.sum(vh[clear] * wvh[clear], axis=1)), 1.0, atol=1e-8)
    return u, s, vh


TALL_SHAPES = [(2000, 64), (20_000, 8), (4096, 128), (1024, 64), (100_000, 3), (16_384, 1)]


def _tall_cases() -> list:
    """``taken, shape`` parameters: every shape on numba; on jax (a new program per shape, the numpy
    reference's SVD of each again) every other shape in the ci profile, all in the deep profile."""
    from conformance import profile

    return [pytest.param(p.values[0], shape, marks=p.marks, id=f"{p.values[0]}-{shape[0]}x{shape[1]}")
            for p in EXECUTORS for i, shape in enumerate(TALL_SHAPES)
            if p.values[0] != "jax" or not profile.current().sampled or i % 2]


@pytest.mark.parametrize("taken, shape", _tall_cases(), indirect=["taken"])
def test_tall_thin_float64_runs_cholesky_qr2_and_agrees_with_numpy(taken, shape):
    x = np.random.default_rng(sum(shape)).normal(size=shape)
    _agrees(x - x.mean(axis=0))
    assert taken == [True]


@pytest.mark.parametrize("cond", [1e2, 1e5])
def test_moderately_ill_conditioned_input_is_kept_and_accurate(taken, cond):
    rng = np.random.default_rng(4)
    # 4000 x 32 as the cases below (on jax the same svd and CholeskyQR2 programs)
    q, _ = np.linalg.qr(rng.normal(size=(32, 32)))
    x = rng.normal(size=(4000, 32)) @ np.diag(np.logspace(0, -np.log10(cond), 32)) @ q
    _agrees(x)
    assert taken == [True]


@pytest.mark.parametrize("case", ["cond 1e9", "rank deficient", "zero column", "zeros", "tiny", "huge"])
def test_inputs_cholesky_qr2_cannot_do_as_well_go_to_lapack(taken, case):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4000, 32))
    if case == "cond 1e9":
        x = x @ np.diag(np.logspace(0, -9, 32))
    elif case == "rank deficient":
        x[:, 7] = x[:, 3] - 2 * x[:, 11]
    elif case == "zero column":
        x[:, 5] = 0
    elif case == "zeros":
        x[:] = 0
    elif case == "tiny":  # the Gram matrix would underflow
        x *= 1e-170
    else:  # ... or overflow
        x *= 1e170
    _agrees(x)
    assert taken == [False]


def test_nonfinite_input_behaves_as_without_cholesky_qr2(taken, monkeypatch):
    x = np.random.default_rng(6).normal(size=(4000, 32))
    x[10, 3] = np.nan
    outcomes = []
    for tries in (True, False):  # with the path, then with it switched off
        if not tries:
            monkeypatch.setattr(tall_svd, "MIN_ELEMENTS", 1 << 62)
        try:
            outcomes.append(("values", np.isnan(_svd(x)[1]).all()))
        except Exception as e:  # noqa: BLE001 - whatever LAPACK's path does, the new one does too
            outcomes.append((type(e).__name__, None))
    assert outcomes[0] == outcomes[1]
    assert taken == [False]


@pytest.mark.parametrize("x,full", [
    (np.random.default_rng(7).normal(size=(4000, 32)).astype(np.float32), False),  # float32: LAPACK
    # full_matrices: LAPACK (2048 x 16 would take CholeskyQR2 otherwise; U is 2048 x 2048, not 4000 x 4000)
    (np.random.default_rng(8).normal(size=(2048, 16)), True),
    (np.random.default_rng(9).normal(size=(200, 64)), False),  # not tall enough
    (np.random.default_rng(10).normal(size=(400, 8)), False),  # too small to pay
    (np.random.default_rng(11).normal(size=(3, 2000, 16)), False),  # a stack
])
def test_other_matrices_take_the_numpy_executors_svd(taken, x, full):
    if full:
        assert tall_svd.applies(x.shape, x.dtype.name, False)  # only full_matrices keeps it from CholeskyQR2
    u, s, vh = _svd(x, full)
    wu, ws, wvh = _numpy_svd(x, full)
    assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape) and s.dtype == x.dtype
    np.testing.assert_allclose(s, ws, rtol=1e-4 if x.dtype == np.float32 else 1e-10)
    assert taken == []


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("case", ["random", "rank deficient"])
def test_eager_compiled_and_jitted_calls_agree_with_numpy(executor, case):
    # the executors' own compiled paths (jax: one program per op, lax.cond inside; jit: the staged graph)
    x = np.random.default_rng(14).normal(size=(3000, 24))
    if case == "rank deficient":
        x[:, 2] = x[:, 0]
    with arrayx.use_executor(executor):
        _agrees(x)
        u, s, vh = arrayx.jit(lambda a: arrayx.linalg.svd(a, full_matrices=False))(arrayx.asarray(x))
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(x, compute_uv=False), rtol=0, atol=1e-12 * np.abs(s).max())
    np.testing.assert_allclose((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), x, atol=1e-10)
