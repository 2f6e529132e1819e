"""The Numba executor's ``linalg.svd``: a tall, thin float64 matrix through CholeskyQR2's matrix
products (``executors/common/tall_svd.py``: the algorithm, its accuracy and where it applies), with
NumPy's BLAS; anything else, and any input where CholeskyQR2 would not be as accurate as LAPACK,
runs the NumPy executor's ``svd`` (LAPACK's gesdd)."""
from __future__ import annotations

import numpy as np

from arrayx.executors.common import buffer_pool as _buffer_pool, tall_svd as _tall
from arrayx.executors.numpy import linalg as _npl

def _triangular_inverse(r: np.ndarray) -> np.ndarray:
    """The inverse of the upper triangular ``r`` (LAPACK's dtrtri where SciPy is importable)."""
    scipy_linalg = _npl.scipy_linalg()
    if scipy_linalg:
        inv, info = scipy_linalg.lapack.dtrtri(r, lower=0)
        if info == 0:
            return inv
    return np.linalg.inv(r)


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` into a pooled buffer when the pool is on (an m x n result is as large as x)."""
    if not _buffer_pool.ENABLED:
        return a @ b
    return np.matmul(a, b, out=_buffer_pool.POOL.empty((a.shape[0], b.shape[1]), np.result_type(a, b)))


def cholesky_qr2_svd(x: np.ndarray):
    """(U, S, Vh) of the tall, thin float64 ``x`` by CholeskyQR2, or None where the result would not
    be as accurate as LAPACK's (``tall_svd``'s rule)."""
    low, high = _tall.NORM_RANGE
    with np.errstate(all="ignore"):
        gram = x.T @ x
        norms = np.diagonal(gram)
        if not (np.all(norms > low) and np.all(norms < high)):  # (NaN fails both)
            return None
        try:
            r1 = np.linalg.cholesky(gram, upper=True)
            q1 = _product(x, _triangular_inverse(r1))
            r2 = np.linalg.cholesky(q1.T @ q1, upper=True)
            ur, s, vh = np.linalg.svd(r2 @ r1)
        except np.linalg.LinAlgError:
            return None
    if not (np.all(np.isfinite(s)) and s[-1] * _tall.MAX_COND >= s[0] > 0):
        return None
    return _product(q1, _triangular_inverse(r2) @ ur), s, vh


def svd(x, full_matrices=True):
    """``linalg.svd``: CholeskyQR2 where ``tall_svd.applies`` and it is as accurate as LAPACK, the
    NumPy executor's ``svd`` otherwise."""
    if _tall.applies(x.shape, x.dtype.name, full_matrices):
        got = cholesky_qr2_svd(x)
        if got is not None:
            return got
    return _npl.svd(x, full_matrices)
