"""Eager client calls on the jax executor: large results on CPU written into dropped earlier ones
(arrayx/executors/jax/recycle.py) give the values they gave before, never overwrite a buffer that
something can still read, and keep the pool's bound; the client calls of benchmarks/bench_clients.py
that the pool speeds up give the NumPy executor's values on every executor."""
from __future__ import annotations

import functools
import os

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from conformance import profile
from tests.conftest import assert_same, on_numpy

ROWS, COLS = 1024, 256  # float64: 2 MiB, above recycle.MIN_BYTES


def _jax_ready():
    ex = base.get("jax")
    if not ex.available():
        pytest.skip(f"executor 'jax' unavailable: {ex.unavailable_reason}")
    ex.xp  # noqa: B018 - loads JAX (and recycle.py's settings)
    from arrayx.executors.jax import recycle

    if not recycle.ENABLED:
        pytest.skip("recycling is off here (not a single CPU device, or ARRAYX_JAX_REUSE_MEMORY=0)")
    return recycle


@pytest.fixture
def recycle():
    mod = _jax_ready()
    mod.clear()
    with xp.use_executor("jax"):
        yield mod
    mod.clear()


def _data(seed=0, shape=(ROWS, COLS)):
    return np.random.default_rng(seed).normal(size=shape)


def _ptr(a) -> int:
    return a._buf.unsafe_buffer_pointer()


def test_a_dropped_result_is_written_again_and_gives_the_same_values(recycle):
    x = xp.asarray(_data(0))
    y = xp.asarray(_data(1))
    first = xp.atan2(x, y)
    addr = _ptr(first)
    want = np.asarray(first).copy()
    del first
    hits = recycle.stats()["hits"]
    again = xp.atan2(x, y)  # the same operation: its result goes into the dropped one's memory
    assert _ptr(again) == addr and recycle.stats()["hits"] == hits + 1
    np.testing.assert_array_equal(np.asarray(again), want)
    other = xp.exp(again)  # another operation of the same result shape finds no spare: again is live
    assert _ptr(other) != _ptr(again)
    np.testing.assert_array_equal(np.asarray(again), want)
    assert_same(other, on_numpy(xp.exp, again))


KEEPERS = {  # what the user keeps of a result that must not be overwritten
    "the array": lambda r: r,
    "a numpy view of its buffer": lambda r: np.asarray(r._buf),
    "numpy.asarray": lambda r: np.asarray(r),
    "a deferred transpose": lambda r: r.T,
    "a basic slice": lambda r: r[3:-5],
    "a reshape": lambda r: xp.reshape(r, (-1,)),
    "a dlpack capsule": lambda r: r._buf.__dlpack__(),
    "np.from_dlpack": lambda r: np.from_dlpack(r),
    "a list": lambda r: [r._buf],
}


@pytest.mark.parametrize("keep", list(KEEPERS))
def test_what_something_still_holds_is_never_written(recycle, keep):
    x = xp.asarray(_data(0))
    r = xp.sin(x)
    want = np.asarray(r).copy()
    kept = KEEPERS[keep](r)
    del r
    fns = (xp.cos, xp.exp, xp.tanh, xp.expm1)
    outs = [f(x) for f in fns]  # results of r's shape, each a chance to reuse it
    got = kept[0] if keep == "a list" else kept
    if keep == "a dlpack capsule":
        got = np.from_dlpack(_Capsule(kept))
    if keep == "a deferred transpose":
        got = np.asarray(got).T
    elif keep in ("a basic slice", "a reshape"):
        want = want[3:-5] if keep == "a basic slice" else want.reshape(-1)
    np.testing.assert_array_equal(np.asarray(got), want)
    for o, f in zip(outs, fns):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(f(xp.asarray(_data(0)))))


class _Capsule:
    """A capsule as DLPack's consumer protocol wants it."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_in_place_operators_reuse_memory_and_match_numpy(recycle):
    a, b, c = _data(0), _data(1, (ROWS, 1)), _data(2, (1, COLS))

    def chain(a, b, c):
        d = -2 * (a @ xp.permute_dims(a, (1, 0)))[:, :COLS]
        d += b
        d += c
        d = xp.maximum(d, xp.asarray(0.0, dtype=d.dtype))
        return xp.sqrt(d)

    x = [xp.asarray(v) for v in (a, b, c)]
    first = chain(*x)
    hits = recycle.stats()["hits"]
    for _ in range(3):
        again = chain(*x)
        np.testing.assert_array_equal(np.asarray(again), np.asarray(first))
    assert recycle.stats()["hits"] > hits
    assert_same(again, on_numpy(chain, *x))


def test_donated_program_gives_the_plain_programs_bits(recycle):
    rng = np.random.default_rng(3)
    x = xp.asarray(rng.normal(size=(ROWS, COLS)) * 50)
    for op in (xp.exp, xp.sin, xp.log1p, lambda v: v * 1.5 + 0.25, lambda v: v / 7.0, xp.tanh):
        plain = np.asarray(op(x)).copy()
        for _ in range(3):  # the later calls write into the dropped results
            np.testing.assert_array_equal(np.asarray(op(x)), plain)
    assert recycle.stats()["hits"] > 0


def test_the_pool_keeps_its_bound_and_clear_empties_it(recycle):
    pool = recycle.SPARES
    was = pool.limit_bytes
    pool.limit_bytes = 3 * ROWS * COLS * 8
    try:
        x = xp.asarray(_data(0))
        keep = [xp.sin(x * float(i)) for i in range(6)]
        s = recycle.stats()
        assert s["held_bytes"] <= pool.limit_bytes and s["dropped"] > 0
        for i, k in enumerate(keep):
            np.testing.assert_array_equal(np.asarray(k), np.asarray(xp.sin(xp.asarray(_data(0) * float(i)))))
        assert recycle.clear() > 0 and recycle.stats()["held"] == 0
    finally:
        pool.limit_bytes = was


def test_a_result_deleted_by_the_users_own_program_is_not_donated(recycle):
    import jax

    x = xp.asarray(_data(0))
    r = xp.sin(x)
    want = np.asarray(r).copy()
    buf = r._buf
    del r
    with jax.enable_x64(True):
        jax.jit(lambda b: b * 2, donate_argnums=0)(buf)  # the user's program takes the buffer
    assert buf.is_deleted()
    del buf
    np.testing.assert_array_equal(np.asarray(xp.sin(x)), want)


def test_results_from_threads_are_their_own(recycle):
    from tests.conftest import run_in_threads

    x = xp.asarray(_data(0))
    got = {}

    def work(i):
        with xp.use_executor("jax"):
            for k in range(5):
                r = xp.sin(x * float(i + 1) + float(k))
                got[i, k] = np.asarray(r).copy()

    run_in_threads(work, 4)
    for (i, k), value in got.items():
        np.testing.assert_array_equal(value, np.asarray(xp.sin(x * float(i + 1) + float(k))))


# -- recorded elementwise chains (arrayx/executors/jax/fused.py): the bits of the operations run one by one

UNARY = {"sqrt": xp.sqrt, "abs": xp.abs, "negative": xp.negative}
BINARY = {"add": xp.add, "subtract": xp.subtract, "maximum": xp.maximum, "minimum": xp.minimum,
          "multiply": xp.multiply}
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 1e-300, -1e-300, 5e-324, -5e-324, 1.0, -1.0, 0.5]


@pytest.fixture
def fused():
    _jax_ready()
    from arrayx.executors.jax import fused as mod

    if not mod.ENABLED:
        pytest.skip("recording is off here (not a single CPU device)")
    with xp.use_executor("jax"):
        yield mod


@functools.cache
def _special(seed, shape=(ROWS, COLS)):
    """Values at three scales with 5% special values (made once per seed and shape: read-only)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape) * rng.choice([1e-3, 1.0, 1e3], size=shape)
    mask = rng.random(shape) < 0.05
    a[mask] = rng.choice(SPECIAL, size=int(mask.sum()))
    a.flags.writeable = False
    return a


def _bits(a) -> np.ndarray:
    """The bits of ``a``, every NaN as one NaN: XLA rewrites ``-x + y`` into ``y - x`` inside one program,
    which gives the same numbers and the same zeros' signs, but may flip a NaN's sign bit."""
    a = np.array(a)
    a[np.isnan(a)] = np.nan
    return a.view(np.uint64 if a.dtype.itemsize == 8 else np.uint32)


def _run(steps, operands, sequential: bool):
    """``steps``: (name, operand index or None) applied in order to operands[0]; ``sequential``: each
    step's value computed before the next (the operations one by one)."""
    x = operands[0]
    for name, k in steps:
        x = UNARY[name](x) if name in UNARY else BINARY[name](x, operands[k]) if k % 2 else BINARY[name](operands[k], x)
        if sequential:
            x._buf.block_until_ready()
    return x


@np.errstate(over="ignore")
def _operands(dtype=np.float64):
    big = [xp.asarray(_special(s).astype(dtype)) for s in (1, 2)]
    col = xp.asarray(_special(3, (ROWS, 1)).astype(dtype))
    row = xp.asarray(_special(4, (1, COLS)).astype(dtype))
    zero_d = xp.asarray(np.asarray(-0.0, dtype))
    return [big[0], big[1], col, row, zero_d, 2.5, dtype(-3.25), 1e-310]


NAMES = sorted(set(UNARY) | set(BINARY))
# Which operands each step of a pair takes: the second full array, a column, a row, a 0-d array, Python
# and NumPy scalars, a subnormal Python float.
OPERAND_FORMS = ((1, 3), (2, 5), (4, 6), (7, 1))


def _forms_for(first: str, second: str) -> tuple:
    """Every operand form for each pair in the deep profile; in the ci profile (``profile.sampled``)
    half of them, alternately the even and the odd forms along the grid of pairs, so each form still
    runs on half of the pairs (each pair is a fresh set of fused programs to compile)."""
    if not profile.current().sampled:
        return OPERAND_FORMS
    turn = (NAMES.index(first) * len(NAMES) + NAMES.index(second)) % 2
    return OPERAND_FORMS[turn::2]


@pytest.mark.parametrize("first", NAMES)
@pytest.mark.parametrize("second", NAMES)
def test_every_pair_of_recorded_operations_gives_the_bits_of_one_by_one(fused, first, second):
    ops = _operands()
    for k1, k2 in _forms_for(first, second):
        steps = [(first, k1), (second, k2)]
        got = _run(steps, ops, sequential=False)
        assert got._buf.__class__ is fused.Pending
        want = _run(steps, ops, sequential=True)
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{steps}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_random_chains_give_the_bits_of_one_by_one(fused, dtype):
    rng = np.random.default_rng(7)
    ops = _operands(dtype)
    # The same 40 chains for each dtype; in the ci profile float64 runs the even ones and float32 the
    # odd ones (every chain runs on one dtype there; each chain's programs are new compiles).
    turn = None if not profile.current().sampled else int(dtype == np.float32)
    for i in range(40):
        steps = [(str(rng.choice(NAMES)), int(rng.integers(1, len(ops)))) for _ in range(int(rng.integers(2, 12)))]
        if turn is not None and i % 2 != turn:
            continue
        got = _run(steps, ops, sequential=False)
        want = _run(steps, ops, sequential=True)
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{steps}")
        assert got.dtype == want.dtype == dtype


def test_a_chain_is_one_program_and_gives_numpys_values(fused):
    a, b, c = _data(0), _data(1, (ROWS, 1)), _data(2, (1, COLS))
    x, y, z = (xp.asarray(v) for v in (a, b, c))
    d = x - y
    d += z
    d = xp.sqrt(xp.maximum(d, xp.asarray(0.0)))
    assert d._buf.__class__ is fused.Pending and d._buf.ops == 4 and len(d._buf.leaves) == 4
    assert_same(d, np.sqrt(np.maximum(a - b + c, 0.0)))
    assert d._buf.leaves == ()  # computed once: the operands are let go
    small = xp.asarray(np.ones(8)) + 1.0  # small results run at once
    assert small._buf.__class__ is not fused.Pending


def test_what_reads_a_pending_value_gets_it(fused):
    import pickle

    a = _data(0)
    reads = {
        "numpy": lambda r: np.asarray(r),
        "sum": lambda r: xp.sum(r, axis=0),
        "matmul": lambda r: r @ xp.ones((COLS, 3), dtype=r.dtype),
        "exp": lambda r: xp.exp(r),
        "slice": lambda r: r[2:9, ::3],
        "int index": lambda r: r[xp.asarray([0, 5, 7])],
        "mask": lambda r: r[r > 1.0],
        "transpose": lambda r: xp.permute_dims(r, (1, 0)) + 1.0,
        "astype": lambda r: xp.astype(r, xp.float32),
        "jit": lambda r: xp.jit(lambda v: v * 2.0 + 1.0)(r),
        "dlpack": lambda r: np.from_dlpack(r),
        "pickle": lambda r: pickle.loads(pickle.dumps(r)),
        "where": lambda r: xp.where(r > 0, r, 0.0),
        "pow 2": lambda r: r ** 2.0,
        "to numpy executor": lambda r: xp.asarray(r, device="numpy"),
        "setitem": lambda r: _set(r),
    }
    for name, read in reads.items():
        r = xp.abs(xp.asarray(a)) + 1.0
        assert r._buf.__class__ is fused.Pending, name
        with xp.use_executor("numpy"):
            want = read(xp.asarray(np.abs(a) + 1.0))
        assert_same(read(r), np.asarray(want))


def _set(r):
    r[0, :] = 5.0
    return r


# -- the client calls of benchmarks/bench_clients.py (small sizes) on every executor, in a subprocess:
# SciPy reads SCIPY_ARRAY_API once, at its first import, which this process may have done without it

_CLIENT_SCRIPT = r"""
import json, os, sys
os.environ["SCIPY_ARRAY_API"] = "1"
import warnings
import numpy as np
import arrayx as xp
from arrayx.core import executor as base
from conformance import profile
from conformance.compare import assert_same
import array_api_extra as xpx
import sklearn
from scipy import fft
from sklearn.metrics.pairwise import euclidean_distances, rbf_kernel

warnings.simplefilter("ignore")
CALLS = {
    "euclidean_distances": lambda d: euclidean_distances(d["A"], d["B"]),
    "rbf_kernel": lambda d: rbf_kernel(d["A"], d["B"], gamma=0.05),
    "rfft": lambda d: fft.rfft(d["S"], axis=-1),
    "xpx_cov": lambda d: xpx.cov(d["X"].T),
}
rng = np.random.default_rng(20261202)
data = {"A": rng.normal(size=(300, 64)), "B": rng.normal(size=(900, 64)), "S": rng.normal(size=(4000, 256)),
        "X": rng.normal(size=(9000, 64))}

def run(ex, name):
    with xp.use_executor(ex), sklearn.config_context(array_api_dispatch=True):
        d = {k: xp.asarray(v) for k, v in data.items()}
        return [np.asarray(CALLS[name](d)) for _ in range(3)]  # later calls reuse dropped results

out, on_numpy = {}, {}  # the NumPy executor's results: computed once per call, compared with every executor's
for ex in sys.argv[1:]:
    for name in CALLS:
        try:
            if name not in on_numpy:
                on_numpy[name] = run("numpy", name)
            got, want = (on_numpy[name] if ex == "numpy" else run(ex, name)), on_numpy[name]
            if not all(np.array_equal(g, got[0]) for g in got):
                raise AssertionError("the three calls differ")
            assert_same(xp.asarray(got[0], device="numpy"), xp.asarray(want[0], device="numpy"))
            out[ex + ":" + name] = "ok"
        except Exception as e:
            out[ex + ":" + name] = type(e).__name__ + ": " + str(e)[:300]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def client_outcomes():
    import json
    import pathlib
    import subprocess
    import sys

    for lib in ("sklearn", "scipy", "array_api_extra"):
        pytest.importorskip(lib)
    root = pathlib.Path(__file__).resolve().parents[2]
    names = [n for n in base.registered() if base.get(n).available()]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("ARRAYX_EXECUTOR", None)
    proc = subprocess.run([sys.executable, "-c", _CLIENT_SCRIPT, *names], capture_output=True, text=True,
                          env=env, timeout=900, cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["euclidean_distances", "rbf_kernel", "rfft", "xpx_cov"])
def test_client_calls_match_the_numpy_executor(executor, name, client_outcomes):
    assert client_outcomes[f"{executor}:{name}"] == "ok"
