"""scikit-learn and SciPy run their array-API code paths on arrayx arrays, on every executor,
and give the same results as on NumPy arrays.

SciPy reads ``SCIPY_ARRAY_API=1`` once, when it is first imported, and other tests in this
process may have imported it already; so each executor's checks run in a fresh interpreter
(this file run as a script), which prints its results as JSON for the tests below to compare.
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


def _run_worker(executor: str) -> dict:
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")]))
    env.pop("ARRAYX_EXECUTOR", None)
    proc = subprocess.run([sys.executable, __file__, executor], env=env, capture_output=True,
                          text=True, timeout=600, cwd=REPO)
    if proc.returncode != 0:
        raise AssertionError(f"interop worker for {executor!r} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def results(executor: str) -> dict:
    pytest.importorskip("sklearn")
    pytest.importorskip("scipy")
    if executor not in _results:
        _results[executor] = _run_worker(executor)
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


# Executors whose buffers are immutable: a view never sees ``+=`` on it (README: "Views").
IMMUTABLE_VIEWS = {"jax", "dask"}


def test_scipy_oaconvolve(results: dict, executor: str) -> None:
    # overlap-add: SciPy adds each block's tail into a view of the next (``ret_overpart += overpart``)
    r = _check(results, executor, "oaconvolve")
    got, want = np.asarray(r["value"]), np.asarray(r["numpy"])
    if executor in IMMUTABLE_VIEWS:
        assert not np.array_equal(got, want), f"oaconvolve matches NumPy on {executor!r} now: update IMMUTABLE_VIEWS"
        pytest.xfail(f"{executor} buffers are immutable: SciPy's += into a view does not reach the result")
    np.testing.assert_array_equal(got, want)


def test_scipy_moment(results: dict, executor: str) -> None:
    r = _check(results, executor, "moment")
    _close(r["value"], r["numpy"], rtol=1e-10)


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
    print(json.dumps(_worker(sys.argv[1])))
