"""The Numba executor: NumPy buffers, native kernels that agree with the NumPy executor (special
values, signed zeros, integer wrap-around, NaN propagation), the size threshold and fallbacks,
the kernel cache, and every function of the standard compared with the NumPy executor.

Most tests lower the size thresholds to 0 so that small arrays run the kernels, and compile
single-threaded kernels (``parallel=False``: the same generated loops, compiled several times
faster); ``test_parallel_*`` run the multi-threaded kernels themselves.  Only the (operation,
dtype) pairs used here are compiled, once per machine (the kernels are cached on disk).
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests.conftest import assert_same, on_numpy, tolerance

EX = base.get("numba")
pytestmark = pytest.mark.skipif(not EX.available(), reason=f"executor 'numba' unavailable: {EX.unavailable_reason}")

if EX.available():
    from arrayx.executors.numba import kernels as K
    from arrayx.executors.numba import executor as N


@pytest.fixture(autouse=True)
def on_numba():
    with xp.use_executor("numba"):
        yield


@pytest.fixture
def native():
    """Every native operation runs its (single-threaded) kernel, whatever the array size and however
    much the worker team took of recent memory-bound calls (``min_team_share`` 0)."""
    saved = dict(EX.thresholds), EX.parallel, EX.min_team_share
    EX.thresholds.update(dict.fromkeys(EX.thresholds, 0))
    EX.parallel = False
    EX.min_team_share = 0
    yield EX
    EX.thresholds.update(saved[0])
    EX.parallel, EX.min_team_share = saved[1], saved[2]


@pytest.fixture
def native_parallel(native):
    EX.parallel = True
    yield EX


#: kernels run by one thread or the team (``numba.team``) are cached by their file's stem
_TEAM_STEMS = {"ew": lambda op, dtype, form, parallel: f"{op}_{form}_{dtype.name}",
               "where": lambda dtype, form, parallel: f"where_{form}_{dtype.name}",
               "clip": lambda dtype, bounds, parallel: f"clip_{bounds}_{dtype.name}"}


def kernel_ran(*key) -> bool:
    """A kernel with this cache key was generated (and no kernel failed to compile)."""
    if key[0] in _TEAM_STEMS:
        key = ("team", _TEAM_STEMS[key[0]](*key[1:]))
    return key in K._kernels and not EX.failed


# -- data with the values where libraries differ --------------------------------------------

FLOAT_SPECIALS = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5,
                  3.5, 1e-310, -1e-310, 5e-324, 1e-40, 1e300, -1e300, 88.0, 89.0, -104.0, 700.0,
                  709.78, 710.0, -745.0, -746.0, 19.5, 20.5, 9.5, -0.3, 1e-8, 3.14159265, 1e5,
                  8191.0, 8193.0, 1e6, -1e7, 1e22, 4503599627370497.0]
RNG = np.random.default_rng(7)


def values(dtype, n=64) -> np.ndarray:
    """Edge values of ``dtype`` followed by random ones (n of them)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            edge = np.array(FLOAT_SPECIALS).astype(dtype)
        return np.concatenate([edge, (RNG.standard_normal(n) * 4).astype(dtype)])
    if dtype.kind == "b":
        return RNG.random(n) > 0.5
    info = np.iinfo(dtype)
    edge = np.array([info.min, info.min + 1, -1 if dtype.kind == "i" else 2, 0, 1, info.max - 1, info.max],
                    dtype=dtype)
    return np.concatenate([edge, RNG.integers(info.min, info.max, n, endpoint=True, dtype=dtype)])


def assert_exactly_numpy(got, want) -> None:
    """Same dtype and shape; NaN where NumPy has NaN, the same sign of zero, values within the
    dtype's tolerance (exact for integers and bools)."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, f"{g.dtype}{g.shape} != {w.dtype}{w.shape}"
    if g.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg="NaN positions differ")
        np.testing.assert_array_equal(np.isinf(g) * np.sign(g), np.isinf(w) * np.sign(w), err_msg="infinities differ")
        zero = (w == 0) & (g == 0)
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]), err_msg="signs of zero differ")
        fin = np.isfinite(w)
        np.testing.assert_allclose(g[fin], w[fin], **tolerance(g.dtype))
    else:
        np.testing.assert_array_equal(g, w)


def both(fn, *args):
    """``fn`` on the Numba executor and on the NumPy executor, args moved to each."""
    with np.errstate(all="ignore"):
        moved = [xp.asarray(a, device="numba") if isinstance(a, np.ndarray) else a for a in args]
        got = fn(*moved)
        want = on_numpy(fn, *moved)
    return got, want


# -- the executor itself -----------------------------------------------------------------------

def test_buffers_are_numpy_arrays_on_the_numba_executor():
    x = xp.asarray([1.0, 2.0])
    assert type(x._buf) is np.ndarray and x.executor == "numba" and x.device == EX.default_device()
    y = xp.exp(x) + xp.sum(x)
    assert type(y._buf) is np.ndarray and y.executor == "numba"
    with pytest.raises(TypeError, match="different executors"):
        x + xp.asarray([1.0, 2.0], device="numpy")


def test_import_arrayx_does_not_import_numba():
    code = "import sys, arrayx; arrayx.executors(); assert 'numba' not in sys.modules, 'numba imported'"
    env = dict(os.environ, ARRAYX_EXECUTOR="numpy")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=os.getcwd())


def test_capabilities_state_native_functions_threshold_and_threading():
    caps = EX.executor_info()
    native = caps["native"]
    for name in ("exp", "tanh", "sin", "add", "multiply", "where", "clip",
                 "sum", "prod", "mean", "var", "std", "min", "max"):
        assert name in native, name
    assert native["exp"] == ["float32", "float64"]
    assert "complex128" not in native["add"] and "int8" in native["add"]
    assert "log" not in native and "atan2" not in native  # these run on NumPy
    assert set(caps["native size thresholds"]) == {"elementwise", "transcendental", "moment", "reduction",
                                                   "extremum", "short rows", "columns", "in place"}
    assert "subtract" in caps["memory-bound"] and "exp" not in caps["memory-bound"]
    assert caps["min team share"] == EX.min_team_share
    kinds = caps["native kinds"]
    assert kinds["exp"] == "transcendental" and kinds["sum"] == "reduction" and kinds["var"] == "moment"
    assert kinds["max"] == "extremum"
    assert kinds["add"] == kinds["where"] == kinds["clip"] == "elementwise"
    assert caps["threading layer"] in ("workqueue", "omp", "tbb", "default", "safe", "forksafe", "threadsafe")
    assert caps["threads"] >= 1 and os.path.isdir(caps["kernel cache"])


def test_asarray_copies_host_data():
    h = np.arange(4.0)
    x = xp.asarray(h)
    x[0] = 9.0
    assert h[0] == 0.0


# -- elementwise kernels -----------------------------------------------------------------------

UNARY_DTYPES = {"f": ["float64"], "iuf": ["float64", "int8"], "iu": ["int16"], "b": ["bool"]}
FLOAT32_TOO = {"exp", "expm1", "tanh", "sin", "cos", "round", "sqrt"}


def unary_cases():
    for name, (kinds, _, _) in K.UNARY.items() if EX.available() else ():
        dts = list(UNARY_DTYPES.get(kinds, ["float64"]))
        if name in FLOAT32_TOO:
            dts.append("float32")
        for dt in dts:
            yield name, dt


@pytest.mark.parametrize("name,dtype", list(unary_cases()))
def test_unary_kernel_matches_numpy(native, name, dtype):
    got, want = both(getattr(xp, name), values(dtype))
    assert_exactly_numpy(got, want)
    assert kernel_ran("ew", name, np.dtype(dtype), "v", False)


BINARY_DTYPE = {"iuf": "float64", "f": "float64", "biuf": "float64", "biu": "int32", "b": "bool"}
# every form (array op array, array op scalar, scalar op array) for these
ALL_FORMS = {"add", "subtract", "divide", "maximum", "less", "equal"}


def binary_cases():
    for name, (kinds, _, _) in K.BINARY.items() if EX.available() else ():
        for form in (("vv", "vs", "sv") if name in ALL_FORMS else ("vv",)):
            yield name, BINARY_DTYPE[kinds], form


@pytest.mark.parametrize("name,dtype,form", list(binary_cases()))
def test_binary_kernel_matches_numpy(native, name, dtype, form):
    a = values(dtype)
    b = np.roll(a, 5)  # pairs the edge values with each other
    if dtype == "bool":
        b = ~a
    fn = getattr(xp, name)
    if form == "vv":
        got, want = both(fn, a, b)
    else:
        scalars = [0.0, -0.0, np.nan, np.inf, 1.5] if dtype == "float64" else [True] if dtype == "bool" else [3]
        for s in scalars:
            call = (lambda x: fn(x, s)) if form == "vs" else (lambda x: fn(s, x))
            got, want = both(call, a)
            assert_exactly_numpy(got, want)
    assert_exactly_numpy(got, want)
    assert kernel_ran("ew", name, np.dtype(dtype), form, False)


@pytest.mark.parametrize("name", ["exp", "expm1", "tanh", "sin", "cos"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transcendental_special_values_are_exact(native, name, dtype):
    """Overflow to inf, underflow to (subnormal) zero, NaN, ±inf and ±0 give exactly NumPy's values."""
    x = values(dtype, n=0)
    got, want = both(getattr(xp, name), x)
    g, w = np.asarray(got), np.asarray(want)
    exact = ~np.isfinite(w) | (w == 0)
    if name in ("exp", "expm1", "tanh"):
        exact |= np.abs(w) == 1  # saturated: exp(0), expm1(-inf..-40), tanh(±20..)
    np.testing.assert_array_equal(g[exact], w[exact])
    np.testing.assert_array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0]))


def test_transcendentals_are_accurate_on_a_sweep(native):
    x = np.concatenate([np.linspace(-30, 30, 20001), np.geomspace(1e-12, 1e4, 2001)])
    for dtype, rtol in (("float64", 4e-16), ("float32", 4e-7)):
        xd = x.astype(dtype)
        for name in ("exp", "expm1", "tanh", "sin", "cos"):
            got, want = both(getattr(xp, name), xd)
            g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
            ok = np.isclose(g, w, rtol=rtol, atol=0) | (np.abs(g - w) <= 4 * np.spacing(np.abs(w).astype(dtype)))
            assert ok.all(), (name, dtype, xd[~ok][:5], g[~ok][:5], w[~ok][:5])


def test_integer_arithmetic_wraps_like_numpy(native):
    a = np.array([-128, -127, -1, 0, 1, 126, 127] * 3, dtype=np.int8)
    for fn in (lambda x: x + x, lambda x: x * x, lambda x: -x, lambda x: xp.abs(x), lambda x: x - 100,
               lambda x: xp.square(x), lambda x: ~x):
        assert_exactly_numpy(*both(fn, a))
    u = np.array([0, 1, 2**64 - 1, 2**63], dtype=np.uint64)
    for fn in (lambda x: x + x, lambda x: x * 3, lambda x: -x, lambda x: 1 - x):
        assert_exactly_numpy(*both(fn, u))


def test_literals_keep_the_operand_dtype(native):
    x = xp.asarray(values("float32"))
    for y in (xp.reciprocal(x), xp.sign(x), x + 1.5, xp.exp(x), xp.round(x)):
        assert y.dtype == xp.float32
    i = xp.asarray(values("int8"))
    assert (i + 1).dtype == xp.int8 and (-i).dtype == xp.int8


# -- where and clip ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "int8", "bool"])
def test_where_matches_numpy(native, dtype):
    a = values(dtype)
    b = np.roll(a, 3)
    c = RNG.random(a.shape) > 0.4
    for x1, x2, form in ((a, b, "vv"), (a, b[1], "vs"), (a[2], b, "sv")):
        s1 = x1 if isinstance(x1, np.ndarray) else x1.item()
        s2 = x2 if isinstance(x2, np.ndarray) else x2.item()
        assert_exactly_numpy(*both(lambda c_, *v: xp.where(c_, *[w if isinstance(w, xp.Array) else w for w in v]),
                                   c, s1, s2))
        assert kernel_ran("where", np.dtype(dtype), form, False), form


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "uint8"])
def test_clip_matches_numpy_on_ties_nan_and_swapped_bounds(native, dtype):
    x = values(dtype)
    bounds = [None, 0, 1, 3] + ([-0.0, 0.0, np.nan, -np.inf, 2.5] if dtype.startswith("float") else [-5, 200])
    for lo in bounds:
        for hi in bounds:
            if (lo is None and hi is None) or (np.dtype(dtype).kind == "u" and -5 in (lo, hi)):
                continue
            assert_exactly_numpy(*both(lambda v: xp.clip(v, lo, hi), x))
    assert kernel_ran("clip", np.dtype(dtype), "both", False)


# -- reductions --------------------------------------------------------------------------------

AXES = [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2)]


@pytest.mark.parametrize("name,dtype", [
    ("sum", "float64"), ("sum", "float32"), ("sum", "int32"), ("sum", "bool"), ("sum", "uint8"),
    ("prod", "float64"), ("prod", "int64"), ("mean", "float64"), ("mean", "float32"),
    ("var", "float64"), ("var", "float32"), ("std", "float64"),
    ("max", "float64"), ("max", "int16"), ("min", "float32"), ("min", "uint64"),
])
def test_reduction_matches_numpy_on_every_axis(native, name, dtype):
    shape = (4, 5, 6)
    if dtype == "bool":
        a = RNG.random(shape) > 0.5
    elif np.dtype(dtype).kind in "iu":
        a = RNG.integers(0, 9, shape).astype(dtype)
    else:
        a = RNG.standard_normal(shape).astype(dtype)
        if name == "prod":
            a = 1 + a / 8
    fn = getattr(xp, name)
    for axis in AXES:
        for keepdims in (False, True):
            kw = {"axis": axis, "keepdims": keepdims}
            if name in ("var", "std"):
                kw["correction"] = 1
            assert_exactly_numpy(*both(lambda v: fn(v, **kw), a))
    assert not EX.failed


def test_empty_reductions_and_elementwise_match_numpy(native):
    empty = np.zeros((0,))
    for name in ("sum", "prod", "mean", "var", "std"):
        assert_exactly_numpy(*both(getattr(xp, name), empty))
    assert_exactly_numpy(*both(lambda v: xp.sum(v, axis=1), np.zeros((3, 0))))
    assert_exactly_numpy(*both(lambda v: xp.max(v, axis=0), np.zeros((0, 2)).T.copy()))
    assert_exactly_numpy(*both(lambda v: xp.exp(v) + v, empty))


def test_reductions_propagate_nan_and_inf(native):
    a = RNG.standard_normal((6, 50))
    a[1, 7] = np.nan
    a[3, 2] = np.inf
    a[4, 9] = -np.inf
    for name in ("sum", "prod", "mean", "var", "std", "max", "min"):
        for axis in (None, 0, 1):
            assert_exactly_numpy(*both(lambda v: getattr(xp, name)(v, axis=axis), a))


def test_float_reductions_that_overflow_match_numpy(native):
    """A sum or product reordered by the kernel can overflow differently: such results come
    from NumPy."""
    big = np.array([3e38, 3e38, -3e38, -3e38] * 8, dtype=np.float32)
    assert_exactly_numpy(*both(xp.sum, big))
    assert_exactly_numpy(*both(xp.prod, np.array([1e200, 1e200, 0.0, 1e-200] * 4)))
    assert_exactly_numpy(*both(lambda v: xp.sum(v, dtype=xp.float32), np.full(100, 3e37, np.float32)))


def test_integer_reductions_wrap_like_numpy(native):
    a = np.full(1000, 2**62, dtype=np.int64)
    assert_exactly_numpy(*both(xp.sum, a))
    assert_exactly_numpy(*both(xp.prod, np.full(200, 3, dtype=np.int64)))
    b = np.full(1000, 200, dtype=np.uint8)
    assert_exactly_numpy(*both(lambda v: xp.sum(v, dtype=xp.uint8), b))
    assert_exactly_numpy(*both(lambda v: xp.sum(v, dtype=xp.float64), b))


def test_max_min_keep_numpy_signed_zero_and_first_nan(native):
    for pattern in ([-0.0, 0.0], [0.0, -0.0]):
        a = np.array(pattern * 40)
        for name in ("max", "min"):
            assert_exactly_numpy(*both(getattr(xp, name), a))
    a = np.arange(100.0)
    a[37] = np.nan
    assert np.isnan(float(xp.max(xp.asarray(a))))


def test_var_std_with_too_large_correction_are_nan(native):
    a = RNG.standard_normal(10)
    for name in ("var", "std"):
        got, want = both(lambda v: getattr(xp, name)(v, correction=10), a)
        assert np.isnan(np.asarray(got)) and np.isnan(np.asarray(want))


# -- thresholds, layouts and fallbacks -----------------------------------------------------

def test_small_arrays_run_on_numpy_without_compiling():
    before = set(K._kernels)
    x = xp.asarray(RNG.standard_normal(100).astype(np.float32))
    assert_same(xp.exp(x) + xp.sum(x), on_numpy(lambda v: xp.exp(v) + xp.sum(v), x))
    assert set(K._kernels) == before
    assert "below the transcendental threshold" in EX.explain("exp", x._buf)


def test_layouts_kernels_do_not_take_run_on_numpy(native):
    a = RNG.standard_normal((6, 8))
    cases = [
        lambda v: xp.exp(v[:, ::2]),  # strided
        lambda v: xp.exp(xp.permute_dims(v, (1, 0))),  # Fortran order
        lambda v: v + v[0],  # broadcasting
        lambda v: xp.where(v > 0, v, v[:, :1]),
        lambda v: xp.clip(v, v[0], 1.0),  # array bounds
        lambda v: xp.sum(v[::2], axis=1),  # strided input to a reduction (copied)
        lambda v: xp.exp(xp.astype(v, xp.complex128)),  # complex
        lambda v: xp.sum(v, axis=()),
    ]
    for fn in cases:
        assert_exactly_numpy(*both(fn, a))
    assert EX.explain("exp", a[:, ::2]) == "an operand is not C-contiguous"
    assert "not run natively" in EX.explain("exp", a.astype(np.complex128))
    assert EX.explain("add", a, RNG.standard_normal((2, 6, 8))).startswith("operands of different shapes")
    assert EX.explain("add", a, a[0]) == "native (a matrix and a row or column vector)"
    assert EX.explain("exp", a) == "native"


def test_functions_without_kernels_run_on_numpy(native):
    a = RNG.uniform(0.1, 2.0, 50)
    for name in ("log", "atan", "cosh", "log1p"):
        assert_exactly_numpy(*both(getattr(xp, name), a))
    assert "has no Numba kernel" in EX.explain("log", a)


def test_a_kernel_numba_cannot_compile_falls_back_to_numpy(native, monkeypatch):
    from numba import njit

    @njit
    def broken(claims, x, out):
        out[0] = x.no_such_attribute

    monkeypatch.setattr(K, "elementwise_kernel", lambda *key, parallel: broken)
    fallback = base.get("numpy").resolve(xp.api.elementwise.exp_p)
    run = N._build_unary(EX, "exp", fallback)
    a = RNG.standard_normal(20)
    try:
        np.testing.assert_array_equal(run(a), np.exp(a))
        assert ("exp", "float64") in EX.failed
        assert "compile failures" in EX.executor_info() and EX.executor_info()["compile failures"]["exp"]
        np.testing.assert_array_equal(run(a), np.exp(a))  # not tried again
    finally:
        EX.failed.clear()


# -- multi-threaded kernels -------------------------------------------------------------------

def test_parallel_kernels_match_numpy(native_parallel):
    n = 5 * 4096 + 3  # several chunks, a partial last one
    a = RNG.standard_normal(n)
    for fn in (xp.exp, xp.sin, lambda v: v + v, lambda v: v * 2.0, lambda v: xp.where(v > 0, v, 0.0),
               lambda v: xp.clip(v, -0.5, 0.5), lambda v: xp.clip(v, np.nan, 0.5), lambda v: xp.clip(v, -0.5, np.nan),
               lambda v: v < 0.3, lambda v: xp.astype(v * 100, xp.int32) * 3):
        assert_exactly_numpy(*both(fn, a))
    assert kernel_ran("ew", "exp", np.dtype("float64"), "v", True)
    from arrayx.executors.numba import team as _numba_team

    from arrayx.executors.numba.fusion.run import _threads

    team = _numba_team.team(_threads())
    jobs = int(team._jobs[0])
    assert_exactly_numpy(*both(xp.exp, a))
    assert team._jobs[0] == jobs + 1  # the elementwise kernel ran on the team
    b = RNG.standard_normal((3, 20000)).astype(np.float32)  # few rows: the reduced axis is split
    jobs = int(team._jobs[0])
    for name in ("sum", "mean", "var", "std", "max", "min"):
        for axis in (None, 0, 1):
            assert_exactly_numpy(*both(lambda v: getattr(xp, name)(v, axis=axis), b))
    assert kernel_ran("sqdev", np.dtype("float32"), np.dtype("float64"))
    assert team._jobs[0] > jobs  # the reductions' work items ran on the team


def test_parallel_kernels_from_several_threads(native_parallel):
    a = RNG.standard_normal(3 * 4096)
    want = np.exp(a)
    errors = []

    def work():
        try:
            for _ in range(20):
                np.testing.assert_allclose(np.asarray(xp.exp(xp.asarray(a, device="numba"))), want, rtol=1e-15)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# -- the kernel cache ----------------------------------------------------------------------

def test_kernels_are_real_source_files_cached_by_numba(native):
    xp.exp(xp.asarray(values("float64")))
    path = K.cache_dir() / "exp_v_float64.py"
    source = path.read_text()
    assert "def kernel(" in source  # compiled under this file's name, with arrayx's disk cache attached
    assert str(K.cache_dir()) == EX.executor_info()["kernel cache"]


def test_cache_directory_is_configurable(tmp_path):
    code = ("import arrayx, numpy as np; import arrayx.executors.numba.kernels as K; "
            "print(K.cache_dir())")
    env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=str(tmp_path / "kernels"))
    out = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True,
                         cwd=os.getcwd()).stdout
    assert out.strip().startswith(str(tmp_path / "kernels"))
    env = dict(os.environ, ARRAYX_CACHE_DIR=str(tmp_path / "root"))
    env.pop("ARRAYX_NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True,
                         cwd=os.getcwd()).stdout
    assert out.strip().startswith(str(tmp_path / "root" / "numba"))


def test_stale_kernel_directories_of_other_versions_are_pruned(tmp_path):
    from arrayx.executors.numba import cache as C

    root = tmp_path / "kernels"
    stale, recent = (root / K.CACHE_SUBFOLDER / "kernels-0000000000000000",
                     root / K.CACHE_SUBFOLDER / "kernels-1111111111111111")
    for d in (stale, recent):
        d.mkdir(parents=True)
        (d / "exp_v_float64_serial.py").write_text("# an older arrayx's kernel\n")
        (d / C.MARKER).write_bytes(C.MARKER_TEXT)  # made by arrayx (see test_numba_cache.py for the rest)
    old = time.time() - (C.STALE_AFTER_DAYS + 1) * 86400
    os.utime(stale, (old, old))
    code = ("import arrayx; import arrayx.executors.numba.kernels as K; print(K.cache_dir())")
    env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=str(root))
    out = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True,
                         cwd=os.getcwd()).stdout
    current = pathlib.Path(out.strip())
    assert current.is_dir() and current.parent == root / K.CACHE_SUBFOLDER
    assert not stale.exists()  # unused for longer than STALE_AFTER_DAYS: removed
    assert recent.exists()  # possibly in use by another installation: kept
