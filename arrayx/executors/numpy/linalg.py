"""The NumPy executor's linalg functions that differ from array-api-compat's NumPy namespace.

``svd`` of a tall, thin real matrix (PCA, Ridge and LDA's solvers: n_samples x n_features with few
features) runs SciPy's ``gesdd`` driver where SciPy is importable: the LAPACK algorithm NumPy's
``linalg.svd`` uses too, but measured faster on one core (OpenBLAS, NumPy 2.4, SciPy 1.17; why NumPy's
wrapper is slower there - its own workspace and copies per call are a likely cause - is not verified):
(2000, 64) 3.11 -> 2.75 ms, (20000, 64) 33.1 -> 30.2 ms alone, and inside scikit-learn's PCA
(benchmarks/bench_clients.py, one interleaved run, plain NumPy time / arrayx time) small 0.59 -> 0.91,
large 0.91 -> 0.98; a square matrix gains nothing and keeps NumPy's function.

The results agree with NumPy's to rounding (tests/executors/test_numpy_svd.py): singular values to
rtol 1e-10, U diag(S) Vh reconstructs x; singular vectors are determined up to sign either way.
SciPy is optional: without it, NumPy's function runs.  On input SciPy refuses (NaN: ValueError)
NumPy's function runs, so the error raised is NumPy's own (LinAlgError).
"""
from __future__ import annotations

import numpy as np

_TALL_MAX_COLUMNS = 128  # n <= 128 columns ...
_TALL_RATIO = 16  # ... and m >= 16 n rows
_REAL = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
_scipy_linalg = None  # scipy.linalg once imported; False where SciPy is not importable
_scipy_svd = None  # scipy.linalg.svd once looked up; False where SciPy is not importable


def scipy_linalg():
    """``scipy.linalg`` (imported on first use), or False where SciPy is not importable."""
    global _scipy_linalg
    if _scipy_linalg is None:
        try:
            import scipy.linalg as found
        except ImportError:
            found = False
        _scipy_linalg = found
    return _scipy_linalg


def _scipy():
    global _scipy_svd
    if _scipy_svd is None:
        found = scipy_linalg()
        _scipy_svd = found.svd if found else False
    return _scipy_svd


def svd(x, full_matrices=True):
    """``linalg.svd``: SciPy's gesdd on a 2-D real tall, thin ``x`` with ``full_matrices=False``
    (see the module docstring), NumPy's ``linalg.svd`` otherwise.  A (U, S, Vh) tuple."""
    if not full_matrices and x.ndim == 2 and x.dtype in _REAL:
        m, n = x.shape
        if 0 < n <= _TALL_MAX_COLUMNS and m >= _TALL_RATIO * n:
            fn = _scipy_svd if _scipy_svd is not None else _scipy()
            if fn:
                try:
                    return fn(x, full_matrices=False, compute_uv=True, overwrite_a=False,
                              check_finite=False, lapack_driver="gesdd")
                except (ValueError, np.linalg.LinAlgError):
                    pass  # NaN input, no convergence: NumPy's function below raises its own error
    return tuple(np.linalg.svd(x, full_matrices=full_matrices))
