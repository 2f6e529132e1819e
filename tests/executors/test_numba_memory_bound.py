"""The Numba executor's choices for memory-bound work: memory-bound elementwise operations run natively
only while the team's workers take their share (``min_team_share``, ``team_pays``), a matrix with a row
or column vector (C and F order) runs as a matrix-vector kernel or NumPy's ufunc into a pooled output of
the matrix's layout, reductions have thresholds by layout ("short rows", "columns"), F-ordered astype
copies are pooled, and a team's caller sleeps (a stall) instead of spinning on a late worker.  Every
result is compared with the NumPy executor's, each branch of each decision is taken.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base

EX = base.get("numba")
pytestmark = pytest.mark.skipif(not EX.available(), reason=f"executor 'numba' unavailable: {EX.unavailable_reason}")

if EX.available():
    from arrayx.executors.numba import executor as N
    from arrayx.executors.numba import team as T

RNG = np.random.default_rng(30)
SENTINEL = 0.001  # a recorded worker share no kernel call gives (it is a multiple of 1/chunks)


@pytest.fixture
def state():
    """The executor's thresholds, team share record and min_team_share, restored afterwards."""
    saved = dict(EX.thresholds), EX.min_team_share, list(EX._shares), EX._declined
    yield EX
    EX.thresholds.clear()
    EX.thresholds.update(saved[0])
    EX.min_team_share = saved[1]
    EX._shares.clear()
    EX._shares.extend(saved[2])
    EX._declined = saved[3]


def run_on(executor, fn, *arrays):
    with xp.use_executor(executor):
        out = fn(*[xp.asarray(a) for a in arrays])
    return np.asarray(out)


def same_as_numpy(fn, *arrays):
    got, want = run_on("numba", fn, *arrays), run_on("numpy", fn, *arrays)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.flags.c_contiguous == want.flags.c_contiguous and got.flags.f_contiguous == want.flags.f_contiguous
    np.testing.assert_array_equal(got, want)
    return got


def team_jobs() -> int:
    from arrayx.executors.numba.fusion.run import _threads

    return int(T.team(_threads())._jobs[0]) if _threads() > 1 else -1


# -- memory-bound elementwise operations: native while the team pays ----------------------------

def test_team_pays_from_the_recent_shares(state):
    ex = state
    ex._shares.clear()
    ex.min_team_share = 0.3
    assert ex.team_pays()  # nothing measured yet: native, to measure
    ex._shares.extend([0.5, 0.4, 0.45])
    assert ex.team_pays()
    ex._shares.clear()
    ex._shares.extend([0.0] * N.TEAM_WINDOW)
    ex._declined = 0
    answers = [ex.team_pays() for _ in range(2 * N.TEAM_REPROBE)]
    # declined, but every TEAM_REPROBE-th call probes natively again
    assert answers.count(True) == 2 and answers[N.TEAM_REPROBE - 1] and answers[-1]
    ex.min_team_share = 0
    assert ex.team_pays()  # 0: always native


@pytest.mark.parametrize("share", [0.0, 2.0])
def test_memory_bound_ops_take_each_branch_and_match_numpy(state, share):
    ex = state
    ex.thresholds.update(elementwise=1)
    ex.min_team_share = share
    ex._shares.clear()
    ex._shares.extend([SENTINEL] * N.TEAM_WINDOW)  # the workers took (almost) nothing lately
    ex._declined = 0
    a = RNG.standard_normal((64, 256))  # 4 chunks of the elementwise kernels
    b = RNG.standard_normal((64, 256))
    before = team_jobs()
    for fn in (lambda x, y: x - y, lambda x, y: x * 2.5, lambda x, y: -x, lambda x, y: x < y):
        same_as_numpy(fn, a, b)
    if share == 0.0:  # always native: the kernels ran (on the team where there is one) and were measured
        assert ex.explain("subtract", a, b) == "native"
        assert SENTINEL not in list(ex._shares)[-4:]
        assert before == -1 or team_jobs() == before + 4
    else:  # the team does not pay: NumPy's ufunc, no kernel on the team
        assert "memory-bound" in ex.explain("subtract", a, b)
        assert before == -1 or team_jobs() == before
        assert list(ex._shares) == [SENTINEL] * N.TEAM_WINDOW
    # a transcendental operation is not memory-bound: native either way
    assert "exp" not in N.MEMORY_BOUND and "memory-bound" not in ex.explain("exp", a)


def test_a_declined_call_reprobes_natively(state):
    ex = state
    ex.thresholds.update(elementwise=1)
    ex.min_team_share = 2.0  # never reached
    ex._shares.clear()
    ex._shares.extend([0.0] * N.TEAM_WINDOW)
    ex._declined = 0
    a = RNG.standard_normal(8 * 4096)
    ex._shares.clear()
    ex._shares.extend([SENTINEL] * N.TEAM_WINDOW)
    for i in range(N.TEAM_REPROBE):
        same_as_numpy(lambda x: x * 3.0, a)
        # declined 15 times (nothing recorded); the 16th call ran natively (the probe) and recorded a share
        assert (list(ex._shares) == [SENTINEL] * N.TEAM_WINDOW) == (i < N.TEAM_REPROBE - 1)
    assert ex._declined == 0


# -- a matrix with a row or column vector ---------------------------------------------------------

VECTOR_CASES = [
    ("C row", lambda m: (m, m.mean(axis=0))),
    ("C col", lambda m: (m, m.mean(axis=1, keepdims=True))),
    ("F row", lambda m: (m.T, m.T.mean(axis=0))),  # one value per column of X.T
    ("F col", lambda m: (m.T, m.T.mean(axis=1, keepdims=True))),  # xpx.cov: X.T - mean
    ("vector first", lambda m: (m.mean(axis=0), m)),
    ("vector first, F", lambda m: (m.T.mean(axis=1, keepdims=True), m.T)),
    ("3-D row", lambda m: (m.reshape(4, -1, m.shape[1]), m.mean(axis=0))),
]


@pytest.mark.parametrize("share", [0.0, 2.0])
@pytest.mark.parametrize("case", [c[0] for c in VECTOR_CASES])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_matrix_vector_matches_numpy_in_values_and_layout(state, share, case, dtype):
    ex = state
    ex.thresholds.update(elementwise=1)
    ex.min_team_share = share
    ex._shares.clear()
    ex._shares.extend([0.0] * N.TEAM_WINDOW)
    ex._declined = 0
    m = (RNG.standard_normal((96, 40)) * 10).astype(dtype)
    x1, x2 = (np.asarray(v).astype(dtype, order="K") for v in dict(VECTOR_CASES)[case](m))
    assert N._vector_operands(x1, x2) is not None
    ops = [lambda a, b: a - b, lambda a, b: a + b, lambda a, b: a * b, xp.maximum, xp.minimum]
    if dtype != "int32":
        ops.append(lambda a, b: a / b)
    for fn in ops:
        got = same_as_numpy(fn, x1, x2)
        assert got.flags.f_contiguous == (case.endswith("F") or case.startswith("F"))
    native = "native (a matrix and a row or column vector)"
    assert (ex.explain("subtract", x1, x2) == native) == (share == 0.0)


def test_matrix_vector_results_are_pooled_and_independent(state):
    ex = state
    ex.thresholds.update(elementwise=1)
    ex.min_team_share = 0.0
    m = RNG.standard_normal((4096, 64)).T  # 2 MB, F order: from the buffer pool
    v = m.mean(axis=1, keepdims=True)
    with xp.use_executor("numba"):
        a, mean = xp.asarray(m), xp.asarray(v)
        r1 = a - mean
        keep = np.asarray(r1).copy()
        r2 = a - mean * 2.0
    assert not np.shares_memory(np.asarray(r1), np.asarray(r2))
    np.testing.assert_array_equal(np.asarray(r1), keep)
    np.testing.assert_array_equal(np.asarray(r2), m - v * 2.0)


def test_other_shapes_and_dtypes_are_not_matrix_vector(state):
    m = RNG.standard_normal((6, 8))
    assert N._vector_operands(m, RNG.standard_normal((2, 6, 8))) is None  # broadcasting both ways
    assert N._vector_operands(m[:, ::2], m[0, ::2]) is None  # strided matrix
    assert N._vector_operands(m[:, :1], m[0]) is None  # (6, 1) + (8,): an outer product
    state.thresholds.update(elementwise=1)
    state.min_team_share = 0.0
    same_as_numpy(lambda a, b: a - b, m.astype(np.float32), m[0])  # mixed dtypes: promoted by NumPy
    z = (m + 1j * m).T
    same_as_numpy(lambda a, b: a / b, z, z.mean(axis=1, keepdims=True))  # complex divide: the NumPy executor's


# -- reductions: thresholds by layout -------------------------------------------------------------

def test_reduction_thresholds_by_layout(state):
    ex = state
    ex.thresholds.update(reduction=1 << 40, extremum=1 << 40, moment=1 << 40, columns=1 << 40)
    ex.thresholds["short rows"] = 1
    x = RNG.standard_normal((300, 64))
    assert ex.explain("sum", x, axis=1) == "native"  # short rows
    assert ex.explain("max", x, axis=1) == "native"
    assert ex.explain("sum", x.T, axis=0) == "native"  # the short rows of X.T
    assert "below the columns threshold" in ex.explain("sum", x, axis=0)
    assert "below the columns threshold" in ex.explain("mean", x.T, axis=1)
    assert "below the extremum threshold" in ex.explain("max", x, axis=0)  # only sum/mean are "columns"
    assert "below the reduction threshold" in ex.explain("sum", RNG.standard_normal((3, 5000)), axis=1)
    for fn in (lambda a: xp.sum(a, axis=1), lambda a: xp.max(a, axis=1), lambda a: xp.mean(a, axis=1),
               lambda a: xp.var(a, axis=1), lambda a: xp.sum(a, axis=0), lambda a: xp.sum(a)):
        got, want = run_on("numba", fn, x), run_on("numpy", fn, x)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    ex.thresholds["columns"] = 1
    assert ex.explain("sum", x, axis=0) == "native"
    np.testing.assert_allclose(run_on("numba", lambda a: xp.mean(a, axis=0), x), x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(run_on("numba", lambda a: xp.mean(a.T, axis=1), x), x.mean(axis=0), rtol=1e-12)


# -- astype of F-ordered arrays ------------------------------------------------------------------

def test_astype_of_an_f_ordered_array_is_pooled_in_f_order():
    x = RNG.standard_normal((40000, 8))  # 2.5 MB: pooled
    for dtype, copy in ((xp.float64, True), (xp.float32, True), (xp.float32, False)):
        with xp.use_executor("numba"):
            a = xp.asarray(x)
            got = np.asarray(xp.astype(a.T, dtype, copy=copy))
        want = run_on("numpy", lambda v: xp.astype(v.T, dtype, copy=copy), x)
        assert got.flags.f_contiguous and got.dtype == want.dtype
        assert not np.shares_memory(got, np.asarray(a))
        np.testing.assert_array_equal(got, want)
    # float -> int keeps the library's rule (the NumPy executor's path)
    big = x.T * 1e30
    got = run_on("numba", lambda v: xp.astype(v, xp.int32), big)
    np.testing.assert_array_equal(got, run_on("numpy", lambda v: xp.astype(v, xp.int32), big))


# -- the team's caller: a short spin, then a sleep (a stall) ---------------------------------------

def test_a_caller_waiting_for_a_late_worker_sleeps_and_counts_a_stall():
    team = T.Team(2)
    done = []
    lock = threading.Lock()
    worker_started = threading.Event()

    def kernel(claims, out):
        """Two chunks: the worker takes chunk 0 and is slow (5 ms); the caller takes what is left."""
        mine = 0
        if threading.current_thread() is threading.main_thread():
            worker_started.wait(5.0)
        while True:
            with lock:
                c = int(claims[0])
                claims[0] += 1
            if c >= 2:
                return mine
            if c == 0:
                worker_started.set()
                time.sleep(0.005)
            out[c] = c + 1.0
            done.append(c)
            with lock:
                claims[1] += 1
            mine += 1

    out = np.zeros(2)
    stalls = team.stalls
    mine = team.run(kernel, 2, (out,))
    assert sorted(done) == [0, 1] and out.tolist() == [1.0, 2.0]
    assert mine == 1  # the caller's own call ran one chunk
    assert team.stalls == stalls + 1  # it waited past CALLER_SPIN_US for the worker's chunk
    assert team.caller_spin <= team.spin or team.spin == 0
