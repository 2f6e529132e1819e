"""``linalg.svd`` of a tall, thin float64 matrix by CholeskyQR2: what the Numba and JAX executors
share (each runs it in its own library: ``numba/linalg.py``, ``jax/linalg.py``).

Tall and thin are PCA's, Ridge's and LDA's matrices (n_samples x n_features with few features).
For ``x`` (m x n) with ``full_matrices=False``:

    R1 = chol(x^T x),  Q1 = x R1^-1,  R2 = chol(Q1^T Q1),  R = R2 R1   (x = Q R with Q = Q1 R2^-1)
    R = Ur S Vh (LAPACK on the small n x n R),  U = Q1 (R2^-1 Ur)

Every step over the m rows is a matrix product (two Gram matrices, two products by n x n
matrices), which BLAS runs on every core near its peak, where the Householder QR inside LAPACK's
``gesdd`` spends much of its time in one-thread panel factorisations.  Measured on 2 vCPUs
(float64, ms; SciPy's gesdd -> Numba executor; jax.numpy.linalg.svd -> JAX executor):
(2000, 64) 7.5 -> 1.5; 4.1 -> 2.9, (20000, 64) 31 -> 11.6; 24.6 -> 16.4, (40000, 64) 51 -> 22.5;
58 -> 36.5.

Accuracy: the second pass makes Q orthonormal to working precision and x = Q R to a backward error
of order machine epsilon whenever cond(x) stays well below eps^-1/2 (~7e7; Yamamoto, Nakatsukasa,
Yanagisawa and Fukaya, "Roundoff error analysis of the CholeskyQR2 algorithm", 2015), so the
singular values carry absolute errors of order eps * S[0], as LAPACK's do.  The result is used only
where that holds with a margin (``accurate``): the computed S[-1] >= S[0] / ``MAX_COND`` and every
column's squared norm within 1e-200 .. 1e200 (no overflow or underflow in the Gram matrix).
Otherwise - and where a Cholesky factorisation fails (rank deficiency, NaN, inf) - LAPACK's
``gesdd`` runs, as it would without this path.  Singular vectors are determined up to sign (and
within repeated singular values) by any SVD, so they can differ from NumPy's in those ways, as
JAX's do.  tests/executors/test_tall_svd.py compares both executors with NumPy on random,
ill-conditioned, rank-deficient and extreme-scale inputs.
"""
from __future__ import annotations

#: tall and thin: at most this many columns, at least ``TALL_RATIO`` times as many rows, and at
#: least ``MIN_ELEMENTS`` elements (below that LAPACK's one call is cheaper than the few products)
TALL_MAX_COLUMNS = 128
TALL_RATIO = 16
MIN_ELEMENTS = 1 << 14
#: largest condition number S[0] / S[-1] whose result is kept (CholeskyQR2 holds to ~7e7)
MAX_COND = 1e6
#: the Gram matrix's diagonal (squared column norms) must lie strictly between these
NORM_RANGE = (1e-200, 1e200)


def applies(shape: tuple, dtype_name: str, full_matrices: bool) -> bool:
    """Whether ``svd`` of an array of ``shape`` and dtype ``dtype_name`` tries CholeskyQR2."""
    if full_matrices or len(shape) != 2 or dtype_name != "float64":
        return False
    m, n = shape
    return 0 < n <= TALL_MAX_COLUMNS and m >= TALL_RATIO * n and m * n >= MIN_ELEMENTS


__all__ = ["applies", "TALL_MAX_COLUMNS", "TALL_RATIO", "MIN_ELEMENTS", "MAX_COND", "NORM_RANGE"]
