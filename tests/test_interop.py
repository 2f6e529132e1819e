"""scikit-learn and SciPy run their array-API code paths on arrayx arrays, on every executor,
and give the same results as on NumPy arrays.

SciPy reads ``SCIPY_ARRAY_API=1`` once, when it is first imported, and other tests in this
process may have imported it already; so the executors' checks run in a fresh interpreter
(this file run as a script, once for every executor whose tests are selected: SciPy, scikit-learn
and JAX imported once), which prints its results as JSON for the tests below to compare.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
_results: dict[str, dict] = {}

# Executors whose arrays a check cannot take, with the reason (the test is an xfail that
# turns into a failure once the check passes, so this table stays true).
KNOWN_LIMITS: dict = {}  # (Dask's LDA works since data-dependent sizes are computed when read)


def _run_worker(executors: list[str]) -> dict:
    """executor -> its results, from one fresh interpreter for all of ``executors``."""
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")]))
    env.pop("ARRAYX_EXECUTOR", None)
    proc = subprocess.run([sys.executable, __file__, *executors], env=env, capture_output=True,
                          text=True, timeout=600, cwd=REPO)
    if proc.returncode != 0:
        raise AssertionError(f"interop worker for {executors} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _selected_executors(request) -> list[str]:
    """The executors of this module's selected tests that take ``results`` (in one run, not one each)."""
    names = []
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if item.path == request.node.path and spec is not None and "results" in getattr(item, "fixturenames", ()):
            name = spec.params.get("executor")
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


@pytest.fixture
def results(executor: str, request) -> dict:
    pytest.importorskip("sklearn")
    pytest.importorskip("scipy")
    if executor not in _results:
        from arrayx.core import executor as base

        wanted = [n for n in _selected_executors(request) if n not in _results and base.get(n).available()]
        _results.update(_run_worker(wanted if executor in wanted else [executor]))
    return _results[executor]


def _check(results: dict, executor: str, name: str) -> dict:
    r = results[name]
    if (executor, name) in KNOWN_LIMITS:
        if "error" in r:
            pytest.xfail(KNOWN_LIMITS[executor, name])
        pytest.fail(f"{name} works on {executor!r} now: remove it from KNOWN_LIMITS")
    assert "error" not in r, f"{name} on {executor!r} raised {r['error']}"
    assert r["type"] == "Array", f"{name} returned a {r['type']}, not an arrayx array"
    assert r["executor"] == executor, f"{name}'s result lives on {r['executor']!r}, not {executor!r}"
    return r


def _close(got, want, rtol=1e-7, atol=1e-9) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def test_scipy_worker_used_array_api_mode(results: dict) -> None:
    assert results["scipy_array_api"] is True


def test_sklearn_pca(results: dict, executor: str) -> None:
    r = _check(results, executor, "pca")
    got, want = np.asarray(r["value"]), np.asarray(r["numpy"])
    assert got.shape == want.shape == (60, 2)
    signs = np.sign(np.sum(got * want, axis=0))       # components are unique up to sign
    _close(got * signs, want)
    _close(r["explained_variance_ratio"], r["explained_variance_ratio_numpy"])


def test_sklearn_pca_covariance_eigh(results: dict, executor: str) -> None:
    r = _check(results, executor, "pca_covariance_eigh")
    got, want = np.asarray(r["value"]), np.asarray(r["numpy"])
    signs = np.sign(np.sum(got * want, axis=1, keepdims=True))
    _close(got * signs, want)


def test_sklearn_lda(results: dict, executor: str) -> None:
    r = _check(results, executor, "lda")
    assert r["value"] == r["numpy"]                   # predicted labels: exact
    _close(r["coef"], r["coef_numpy"], rtol=1e-6)
    assert r["score"] == pytest.approx(r["score_numpy"])


def test_scipy_logsumexp(results: dict, executor: str) -> None:
    r = _check(results, executor, "logsumexp")
    _close(r["value"], r["numpy"], rtol=1e-12)
    r = _check(results, executor, "logsumexp_weighted")
    _close(r["value"], r["numpy"], rtol=1e-12)


def test_scipy_oaconvolve(results: dict, executor: str) -> None:
    # overlap-add: SciPy adds each block's tail into a view of the next (``ret_overpart += overpart``,
    # the view a slice of ``swapaxes(ret)``): permute_dims is a view on every executor, as NumPy's
    r = _check(results, executor, "oaconvolve")
    _close(r["value"], r["numpy"], rtol=1e-10)  # JAX's FFT differs from pocketfft in the last bits


def test_scipy_moment(results: dict, executor: str) -> None:
    r = _check(results, executor, "moment")
    _close(r["value"], r["numpy"], rtol=1e-10)


# -- NumPy's protocols on arrayx arrays (api/_numpy_dispatch.py), in this process ----------------------

_A = np.array([[0.5, -1.25, 2.0], [3.5, 0.0, -0.75]])
_B = np.array([[1.5, 2.0, -0.5], [0.25, -3.0, 4.0]])


def _same(got, want) -> None:
    import arrayx as xp

    assert isinstance(got, xp.Array), f"got a {type(got).__name__}, not an arrayx array"
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, equal_nan=True)


_UNARY = ["abs", "absolute", "negative", "positive", "sqrt", "exp", "expm1", "log1p", "sin", "cos", "tanh",
          "arctan", "floor", "ceil", "trunc", "rint", "sign", "square", "isnan", "isfinite", "signbit", "conjugate",
          "reciprocal", "logical_not"]
_BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod", "power",
           "maximum", "minimum", "arctan2", "hypot", "copysign", "equal", "not_equal", "less", "less_equal",
           "greater", "greater_equal", "logaddexp", "logical_and", "nextafter"]


@pytest.mark.parametrize("name", _UNARY)
def test_numpy_unary_ufuncs_run_as_arrayx(executor, name) -> None:
    import arrayx as xp

    fn = getattr(np, name)
    x = xp.asarray(np.abs(_A) if name in ("sqrt", "log1p", "reciprocal") else _A + 0.25)
    with np.errstate(all="ignore"):
        _same(fn(x), fn(np.asarray(x)))
    assert fn(x).device == x.device


@pytest.mark.parametrize("name", _BINARY)
def test_numpy_binary_ufuncs_with_mixed_operands(executor, name) -> None:
    import arrayx as xp

    fn = getattr(np, name)
    x = xp.asarray(np.abs(_A) + 0.5 if name == "power" else _A)
    want = fn(np.asarray(x), _B)
    with np.errstate(all="ignore"):
        _same(fn(x, xp.asarray(_B)), want)
        _same(fn(x, _B), want)  # a NumPy array operand moves to x's executor
        _same(fn(np.asarray(x), xp.asarray(_B)), want)  # and the other way round
        _same(fn(x, 2.0), fn(np.asarray(x), 2.0))  # Python scalars stay weak
        _same(fn(x, np.float64(2.0)), fn(np.asarray(x), np.float64(2.0)))


def test_numpy_operands_and_scalars_meet_arrayx_arrays(executor) -> None:
    import arrayx as xp

    x32 = xp.asarray(_A.astype(np.float32))
    _same(_B + xp.asarray(_A), _B + _A)  # numpy_array + arrayx_array is an arrayx array
    _same(_B * x32, _B * _A.astype(np.float32))  # float64 array * float32 array: float64, as in NumPy
    _same(np.float64(2.0) * x32, np.float64(2.0) * _A.astype(np.float32))  # NumPy scalars are typed (NEP 50)
    _same(2.0 * x32, 2.0 * _A.astype(np.float32))
    _same(np.int64(3) + xp.asarray([1, 2], dtype=xp.int8), np.int64(3) + np.array([1, 2], np.int8))
    _same(_B < xp.asarray(_A), _B < _A)
    _same(np.matmul(xp.asarray(_A), _B.T), _A @ _B.T)
    _same(_B @ xp.asarray(_A).mT, _B @ _A.T)


def test_numpy_ufunc_methods(executor) -> None:
    import arrayx as xp

    x = xp.asarray(_A)
    _same(np.add.reduce(x), np.add.reduce(_A))
    _same(np.add.reduce(x, axis=1, keepdims=True), np.add.reduce(_A, axis=1, keepdims=True))
    _same(np.multiply.reduce(x, axis=None), np.multiply.reduce(_A, axis=None))
    _same(np.maximum.reduce(x, axis=1), np.maximum.reduce(_A, axis=1))
    _same(np.logical_or.reduce(x > 1, axis=0), np.logical_or.reduce(_A > 1, axis=0))
    _same(np.add.accumulate(x, axis=1), np.add.accumulate(_A, axis=1))
    _same(np.multiply.outer(x[0], x[1]), np.multiply.outer(_A[0], _A[1]))  # computed by NumPy, moved back
    with pytest.raises(TypeError, match="NotImplemented"):  # in place on a copy would be lost: x.at[i].add(v)
        np.add.at(x, [0], 1.0)


def test_ufuncs_without_arrayx_counterpart_run_on_numpy_and_come_back(executor) -> None:
    import arrayx as xp

    scipy_special = pytest.importorskip("scipy.special")
    x = xp.asarray(_A)
    _same(np.exp2(x), np.exp2(_A))
    _same(np.deg2rad(x), np.deg2rad(_A))
    _same(scipy_special.expit(x), scipy_special.expit(_A))  # SciPy's special functions are ufuncs
    q, r = np.divmod(x, 0.75)
    _same(q, np.divmod(_A, 0.75)[0])
    _same(r, np.divmod(_A, 0.75)[1])
    assert np.exp2(x).device == x.device
    mask = np.array([True, False, True])
    _same(np.add(x, 1.0, where=mask, out=xp.full((2, 3), 9.0)), np.add(_A, 1.0, where=mask, out=np.full((2, 3), 9.0)))
    with pytest.raises(TypeError, match="float128 is not a dtype of the array API"):  # asarray's rules apply
        np.add(x, 1.0, dtype=np.longdouble)


def test_out_is_written_with_numpys_casting_rule(executor) -> None:
    import arrayx as xp

    x = xp.asarray(_A)
    target = np.zeros((2, 3))
    assert np.multiply(x, 2.0, out=target) is target
    np.testing.assert_array_equal(target, _A * 2.0)
    host = _B.copy()
    host += x  # stays a NumPy array, written in place, as with NumPy operands
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(host, _B + _A)
    into = xp.zeros((2, 3))
    assert np.subtract(x, _B, out=into) is into
    _same(into, _A - _B)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'multiply' output from dtype\\('float64'\\) to dtype\\('int64'\\)"):
        np.multiply(x, 2.5, out=xp.zeros((2, 3), dtype=xp.int64))


def test_numpy_functions_write_out(executor) -> None:
    import arrayx as xp

    d = xp.asarray(_A)
    assert np.clip(d, 0, None, out=d) is d  # scikit-learn's nan_euclidean_distances
    _same(d, np.clip(_A, 0, None))
    host = np.zeros(3)
    assert np.sum(xp.asarray(_A), axis=0, out=host) is host
    np.testing.assert_array_equal(host, _A.sum(axis=0))


def test_numpy_ufuncs_under_transforms(executor) -> None:
    import arrayx as xp

    x = xp.asarray(_A)
    _same(xp.jit(lambda v: np.sin(v) * np.float64(2.0) + np.sum(v, axis=0))(x), np.sin(_A) * 2.0 + _A.sum(axis=0))
    g = xp.grad(lambda v: xp.sum(np.exp(v)))(x)
    _same(g, np.exp(_A))
    with pytest.raises(Exception, match="jit|trac|symbolic"):  # no arrayx counterpart: NumPy needs values
        xp.jit(lambda v: np.exp2(v))(x)


@pytest.mark.parametrize("call", [
    lambda m, a: m.sum(a), lambda m, a: m.sum(a, axis=1, keepdims=True), lambda m, a: m.prod(a, axis=0),
    lambda m, a: m.mean(a, axis=0), lambda m, a: m.std(a, ddof=1), lambda m, a: m.var(a, axis=1),
    lambda m, a: m.max(a, axis=1), lambda m, a: m.amin(a), lambda m, a: m.argmax(a, axis=0),
    lambda m, a: m.all(a > -2), lambda m, a: m.any(a > 3, axis=1), lambda m, a: m.cumsum(a),
    lambda m, a: m.cumsum(a, axis=1), lambda m, a: m.cumprod(a, axis=0), lambda m, a: m.count_nonzero(a, axis=0),
    lambda m, a: m.concatenate([a, a], axis=1), lambda m, a: m.concatenate([a, a], axis=None),
    lambda m, a: m.stack([a, a]), lambda m, a: m.where(a > 0, a, -a), lambda m, a: m.where(a > 0)[1],
    lambda m, a: m.clip(a, -1, 1), lambda m, a: m.clip(a, None, 0.5), lambda m, a: m.round(a),
    lambda m, a: m.transpose(a), lambda m, a: m.reshape(a, (3, 2)), lambda m, a: m.reshape(a, -1),
    lambda m, a: m.squeeze(m.expand_dims(a, 0)), lambda m, a: m.moveaxis(a, 0, 1), lambda m, a: m.flip(a, axis=1),
    lambda m, a: m.roll(a, 1, axis=1), lambda m, a: m.broadcast_to(a[0], (4, 3)), lambda m, a: m.tile(a, (2, 1)),
    lambda m, a: m.repeat(a, 2, axis=0), lambda m, a: m.sort(a, axis=1), lambda m, a: m.argsort(a, axis=None),
    lambda m, a: m.sort(a, kind="stable"), lambda m, a: m.nonzero(a)[0], lambda m, a: m.searchsorted(m.sort(a[0]), a[1]),
    lambda m, a: m.take(a, [2, 0], axis=1), lambda m, a: m.tensordot(a, a, axes=([1], [1])),
    lambda m, a: m.zeros_like(a), lambda m, a: m.full_like(a, 7.0), lambda m, a: m.ones_like(a, dtype=m.int32),
    lambda m, a: m.tril(a), lambda m, a: m.triu(a, k=1), lambda m, a: m.diff(a, axis=1), lambda m, a: m.real(a),
])
def test_numpy_functions_with_arrayx_counterparts(executor, call) -> None:
    import arrayx as xp

    want = call(np, _A)
    got = call(np, xp.asarray(_A))
    _same(got, want)
    assert got.device.executor == executor


def test_numpy_functions_without_counterpart_fall_back_to_numpy(executor) -> None:
    import arrayx as xp

    x = xp.asarray(_A)
    counts, edges = np.histogram(x, bins=3)
    want = np.histogram(_A, bins=3)
    assert isinstance(counts, np.ndarray)  # NumPy's result, as NumPy returns it (as Dask does)
    np.testing.assert_array_equal(counts, want[0])
    np.testing.assert_array_equal(edges, want[1])
    np.testing.assert_array_equal(np.percentile(x, 30, axis=0), np.percentile(_A, 30, axis=0))
    np.testing.assert_array_equal(np.column_stack([x[0], _B[0]]), np.column_stack([_A[0], _B[0]]))
    np.testing.assert_array_equal(np.atleast_2d(x[0]), np.atleast_2d(_A[0]))
    assert np.allclose(x, _A) and np.array_equal(x, _A)
    assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x) == 6
    assert isinstance(np.asarray(x), np.ndarray)  # still __array__


def test_numpy_functions_take_what_numpy_takes_where_arrayx_refuses(executor) -> None:
    """np.where with an int condition and Python scalars (SciPy's stats does this): arrayx.where refuses
    an int condition, NumPy takes it; NumPy's function gives NumPy's values, as an arrayx array."""
    import arrayx as xp

    host = np.array([[1, 0, 2], [0, 3, 0]])
    c = xp.asarray(host)
    got = np.where(c, 1, 0)
    assert isinstance(got, xp.Array) and got.device == c.device
    np.testing.assert_array_equal(np.asarray(got), np.where(host, 1, 0))
    assert got.dtype == np.where(host, 1, 0).dtype
    got = np.where(c > 0, 1.5, c)
    np.testing.assert_array_equal(np.asarray(got), np.where(host > 0, 1.5, host))


def test_numpy_only_arguments_are_refused_by_name(executor) -> None:
    import arrayx as xp

    x = xp.asarray(_A)
    with pytest.raises(TypeError, match=r"numpy.sum\(\.\.\., where=.*arrayx.sum has no counterpart for where="):
        np.sum(x, where=np.array([True, False, True]))
    with pytest.raises(TypeError, match=r"numpy.round\(\.\.\., decimals=2\)"):
        np.round(x, decimals=2)
    with pytest.raises(TypeError, match=r"numpy.sum\(\.\.\., initial=1"):
        np.sum(x, initial=1.0)


def test_matplotlib_dendrogram_draws_arrayx_linkage(executor) -> None:
    # SciPy's dendrogram calls NumPy (and matplotlib) functions on what it is given
    hierarchy = pytest.importorskip("scipy.cluster.hierarchy")
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import arrayx as xp
    import matplotlib.pyplot as plt

    points = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.2, 5.1], [9.0, 0.5]])
    link = hierarchy.linkage(points, "average")
    fig, ax = plt.subplots()
    try:
        got = hierarchy.dendrogram(xp.asarray(link), ax=ax, no_plot=False)
        want = hierarchy.dendrogram(link, no_plot=True)
    finally:
        plt.close(fig)
    assert got["ivl"] == want["ivl"] and got["leaves"] == want["leaves"]
    np.testing.assert_allclose(np.asarray(got["dcoord"], dtype=float), np.asarray(want["dcoord"], dtype=float))


# -- the worker: runs in a fresh interpreter with SCIPY_ARRAY_API=1 --------------------------------


def _worker(executor: str) -> dict:
    import scipy
    import scipy.signal
    import scipy.special
    import scipy.stats
    import sklearn
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    import arrayx as xp

    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, 5)) * np.array([3.0, 2.0, 1.0, 0.5, 0.1])
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 1).astype(np.int64)
    Xa, ya = xp.asarray(X, device=executor), xp.asarray(y, device=executor)
    out: dict = {"scipy_array_api": scipy._lib._array_api.SCIPY_ARRAY_API not in ("", "0", False, None)}

    def record(name, fn, **extra):
        try:
            got = fn(Xa, ya)
            want = fn(X, y)
            entry = {"type": type(got).__name__, "executor": getattr(got, "executor", None),
                     "value": np.asarray(got).tolist(), "numpy": np.asarray(want).tolist()}
            for key, extra_fn in extra.items():
                entry[key] = np.asarray(extra_fn(Xa, ya)).tolist()
                entry[key + "_numpy"] = np.asarray(extra_fn(X, y)).tolist()
        except Exception as e:  # noqa: BLE001 - reported to the parent test
            entry = {"error": f"{type(e).__name__}: {e}"}
        out[name] = entry

    with sklearn.config_context(array_api_dispatch=True):
        record("pca", lambda A, Y: PCA(n_components=2, svd_solver="full").fit_transform(A),
               explained_variance_ratio=lambda A, Y: PCA(n_components=2, svd_solver="full")
               .fit(A).explained_variance_ratio_)
        record("pca_covariance_eigh", lambda A, Y: PCA(n_components=3, svd_solver="covariance_eigh")
               .fit(A).components_)
        record("lda", lambda A, Y: LinearDiscriminantAnalysis().fit(A, Y).predict(A),
               coef=lambda A, Y: LinearDiscriminantAnalysis().fit(A, Y).coef_,
               score=lambda A, Y: float(LinearDiscriminantAnalysis().fit(A, Y).score(A, Y)))
    record("logsumexp", lambda A, Y: scipy.special.logsumexp(A, axis=0))
    record("logsumexp_weighted", lambda A, Y: scipy.special.logsumexp(
        A, axis=1, b=(A * 0 + 0.5) if isinstance(A, np.ndarray) else xp.full_like(A, 0.5)))
    record("moment", lambda A, Y: scipy.stats.moment(A, order=3, axis=0))
    signal, kernel = rng.standard_normal(5000), rng.standard_normal(301)  # long enough for overlap-add
    signal_a, kernel_a = xp.asarray(signal, device=executor), xp.asarray(kernel, device=executor)
    record("oaconvolve", lambda A, Y: scipy.signal.oaconvolve(
        *((signal, kernel) if isinstance(A, np.ndarray) else (signal_a, kernel_a))))
    return out


if __name__ == "__main__":
    print(json.dumps({name: _worker(name) for name in sys.argv[1:]}))
