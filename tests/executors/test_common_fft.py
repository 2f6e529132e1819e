"""The NumPy and Numba executors' transforms (executors/common/fft.py): bit-identical to numpy.fft
whether a batch runs on one thread or is split between threads (Numba), large results from the
buffer pool, ``axes=()`` a new array on every executor."""
from __future__ import annotations


import numpy as np
import pytest

import arrayx
from arrayx.core import executor as base
from arrayx.executors.common import fft as F, threads as T

HOST = [pytest.param(name, marks=pytest.mark.skipif(
    not base.get(name).available(), reason=f"executor {name!r} unavailable: {base.get(name).unavailable_reason}"))
    for name in ("numpy", "numba")]
EVERY = [pytest.param(name, marks=pytest.mark.skipif(
    not base.get(name).available(), reason=f"executor {name!r} unavailable: {base.get(name).unavailable_reason}"))
    for name in ("numpy", "numba", "jax", "dask", "cupy")]


@pytest.fixture
def split_small(monkeypatch):
    """Small arrays split too (the thresholds lowered), so the threaded path runs in a quick test."""
    monkeypatch.setattr(F, "PARALLEL_MIN", 64)
    monkeypatch.setattr(F, "PIECE_MIN", 16)


def _input(shape, complex_, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    if complex_:
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


# (arrayx function, numpy.fft function, complex input, 1-D (n) or n-D (s, axes))
ONE_DIM = [("fft", True), ("ifft", True), ("rfft", False), ("irfft", True), ("hfft", True), ("ihfft", False)]
N_DIM = [("fftn", True), ("ifftn", True), ("rfftn", False), ("irfftn", True)]


@pytest.mark.parametrize("executor", HOST)
@pytest.mark.parametrize("name,complex_", ONE_DIM)
@pytest.mark.parametrize("shape,axis,n", [
    ((40, 33), -1, None), ((40, 33), 0, None), ((6, 50, 7), 1, None),
    ((40, 33), -1, 20), ((40, 33), -1, 64), ((9, 40), 0, 57),
])
def test_one_dim_bit_identical_to_numpy(split_small, executor, name, complex_, shape, axis, n):
    # every norm and both precisions in one item (norm only scales NumPy's result per piece): every
    # failing case is listed, not only the first
    failing = []
    threads = base.get("numba")._numba().get_num_threads() if executor == "numba" else 1
    for norm in ("backward", "ortho", "forward"):
        for dtype in ((np.complex128, np.complex64) if complex_ else (np.float64, np.float32)):
            case = (norm, np.dtype(dtype).name)
            x = _input(shape, complex_, dtype)
            want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
            before = T.split_calls
            with arrayx.use_executor(executor):
                got = np.asarray(getattr(arrayx.fft, name)(arrayx.asarray(x), n=n, axis=axis, norm=norm))
            if got.dtype != want.dtype or got.shape != want.shape:
                failing.append((*case, f"{got.dtype}{got.shape} != NumPy's {want.dtype}{want.shape}"))
            elif not np.array_equal(got, want):
                failing.append((*case, f"values differ by up to {np.max(np.abs(got - want)):.3g}"))
            # Numba splits the batch between its threads; NumPy's executor never does
            if (T.split_calls > before) != (threads > 1):
                failing.append((*case, f"split {T.split_calls > before} with {threads} threads"))
    assert not failing, failing


@pytest.mark.parametrize("executor", HOST)
@pytest.mark.parametrize("name,complex_", N_DIM)
@pytest.mark.parametrize("shape,s,axes", [
    ((12, 10, 9), None, None), ((12, 10, 9), None, (0, 2)), ((12, 10, 9), (8, 16), (2, 0)),
    ((30, 24), (30, 30), (0, 1)),
])
def test_n_dim_bit_identical_to_numpy(split_small, executor, name, complex_, shape, s, axes):
    x = _input(shape, complex_, np.complex128 if complex_ else np.float64, seed=3)
    want = getattr(np.fft, name)(x, s=s, axes=axes)
    with arrayx.use_executor(executor):
        got = np.asarray(getattr(arrayx.fft, name)(arrayx.asarray(x), s=s, axes=axes))
    assert got.shape == want.shape and np.array_equal(got, want), (executor, name, s, axes)


@pytest.mark.parametrize("executor", HOST)
def test_a_single_signal_and_strided_inputs(split_small, executor):
    # one 1-D signal has nothing to split; a transposed / strided batch splits along its other axis
    x = _input((4000,), False, np.float64)
    m = _input((64, 300), True, np.complex128)[:, ::3].T  # (100, 64), strided
    with arrayx.use_executor(executor):
        assert np.array_equal(np.asarray(arrayx.fft.rfft(arrayx.asarray(x))), np.fft.rfft(x))
        assert np.array_equal(np.asarray(arrayx.fft.fft(arrayx.asarray(m), axis=0)), np.fft.fft(m, axis=0))


@pytest.mark.parametrize("executor", HOST)
def test_large_results_come_from_the_buffer_pool(pool_on, executor):
    x = _input((512, 1024), False, np.float64)  # a 4 MB complex result: pooled
    with arrayx.use_executor(executor):
        a = arrayx.asarray(x)
        first = arrayx.fft.rfft(a)
        ptr = np.asarray(first).__array_interface__["data"][0]
        want = np.asarray(first).copy()
        del first
        again = arrayx.fft.rfft(a)  # the same size class, free again: the same memory
        assert np.asarray(again).__array_interface__["data"][0] == ptr
        assert np.array_equal(np.asarray(again), want)
        kept = arrayx.fft.rfft(a)  # `again` still holds that buffer: new memory
        assert np.asarray(kept).__array_interface__["data"][0] != ptr
        assert np.array_equal(np.asarray(kept), np.asarray(again))


@pytest.mark.parametrize("executor", EVERY)
def test_no_axes_gives_a_new_array(executor):
    # NumPy's fftn(x, axes=()) returns x itself; arrayx gives a copy (writing to it leaves x alone)
    with arrayx.use_executor(executor):
        x = arrayx.asarray([1 + 0j, 2, 3])
        for fn in (arrayx.fft.fftn, arrayx.fft.ifftn):
            y = fn(x, axes=())
            y[0] = 5
            assert np.asarray(x).tolist() == [1, 2, 3] and np.asarray(y).tolist() == [5, 2, 3]
        r = arrayx.fft.fftn(arrayx.asarray([1.0, 2.0], dtype=arrayx.float32), axes=())
        assert r.dtype == arrayx.complex64 and np.asarray(r).tolist() == [1, 2]
