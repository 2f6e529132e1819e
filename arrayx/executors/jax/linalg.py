"""The JAX executor's ``linalg.svd`` (and, on a TPU, its ``eigh``, ``eigvalsh`` and ``qr``): a tall,
thin float64 matrix through CholeskyQR2's matrix products (``executors/common/tall_svd.py``: the
algorithm, its accuracy and where it applies), in one XLA program whose ``lax.cond`` runs
``jax.numpy.linalg.svd`` (LAPACK's gesdd) instead where CholeskyQR2 would not be as accurate: no
value leaves the device to decide.  Anything else is ``jax.numpy.linalg.svd`` itself.

On a TPU, XLA's svd does not scale its input as LAPACK does: a float32 or complex64 matrix with
entries near 1e19 overflows inside (squares pass float32's 3.4e38) and gave NaN singular values (the
official suite's test_svd and test_svdvals on the chip, session 23).  Its eigh and qr do not scale
either: on the chip (session 24; now ``python -m conformance.tpu_linalg_accuracy``) float32 matrices
with entries near 1e19 gave a non-finite Q R and eigenvalues 60% off, and entries near 1e-19 or
1e-30 (products below float32's normal range, which a TPU flushes to zero) eigenvalues and Q R
10-80% off, with no error.  ``scaled_svd``, ``scaled_svdvals``, ``scaled_eigh``,
``scaled_eigvalsh`` and ``scaled_qr`` scale each matrix by a power of two first (exact: the factors
leave U, Vh, the eigenvectors and Q as they are and multiply S, the eigenvalues and R back), and the
executor's table runs them on that platform only (``numpy_rules.ONLY_ON``)."""
from __future__ import annotations

from arrayx.executors.common import tall_svd as _tall


def cholesky_qr2(x):
    """CholeskyQR2's pieces of the tall, thin float64 ``x``: (Q1, R2, Ur, S, Vh, accurate) with
    U = Q1 R2^-1 Ur, and ``accurate`` (a device bool) where the result is as accurate as LAPACK's
    (``tall_svd``'s rule)."""
    import jax.numpy as jnp
    from jax import lax

    low, high = _tall.NORM_RANGE
    gram = x.T @ x
    norms = jnp.diagonal(gram)
    r1 = jnp.linalg.cholesky(gram, upper=True)  # (NaN where it fails: ``accurate`` is then False)
    eye = jnp.eye(x.shape[1], dtype=x.dtype)
    q1 = x @ lax.linalg.triangular_solve(r1, eye, left_side=True, lower=False)
    r2 = jnp.linalg.cholesky(q1.T @ q1, upper=True)
    ur, s, vh = jnp.linalg.svd(r2 @ r1)
    accurate = (jnp.all(norms > low) & jnp.all(norms < high) & jnp.all(jnp.isfinite(s))
                & (s[-1] * _tall.MAX_COND >= s[0]) & (s[0] > 0))
    return q1, r2, ur, s, vh, accurate


def svd(x, full_matrices=True):
    """``linalg.svd``: CholeskyQR2 where ``tall_svd.applies``, LAPACK's gesdd (``jax.numpy``'s) where
    its result would not be as accurate, decided on the device by ``lax.cond``."""
    import jax.numpy as jnp

    if not _tall.applies(tuple(x.shape), x.dtype.name, full_matrices):
        return tuple(jnp.linalg.svd(x, full_matrices=full_matrices))
    from jax import lax

    q1, r2, ur, s, vh, accurate = cholesky_qr2(x)

    def kept():
        return q1 @ lax.linalg.triangular_solve(r2, ur, left_side=True, lower=False), s, vh

    def lapack():
        return tuple(jnp.linalg.svd(x, full_matrices=False))

    return lax.cond(accurate, kept, lapack)


def _power_of_two_scaled(x):
    """(``x`` with each matrix scaled by a power of two to a largest magnitude in [0.5, 1), the two
    exponents that undo it): two factors, each within the normal range even for float32's extremes
    (one factor 2**-128 would be subnormal, and a TPU flushes subnormals to zero).  An all-zero,
    empty or non-finite matrix is left as it is.  The exponents are read and made in float32 for every
    dtype: XLA:TPU's float64 is emulated with float32's exponent range, and its ``frexp``/``ldexp`` of
    float64 (64-bit integer shifts) fail to compile there ("shift-right-arithmetic with different
    element types")."""
    import jax.numpy as jnp

    m = jnp.max(jnp.abs(x), axis=(-2, -1), keepdims=True, initial=0).astype(jnp.float32)
    _, e = jnp.frexp(m)
    e = jnp.where(jnp.isfinite(m) & (m > 0), e, 0)
    half = e // 2
    one = jnp.ones((), dtype=jnp.float32)
    x = x * jnp.ldexp(one, -half).astype(x.dtype) * jnp.ldexp(one, half - e).astype(x.dtype)
    return x, half[..., 0], (e - half)[..., 0]


def _scaled_back(s, half, rest):
    import jax.numpy as jnp

    one = jnp.ones((), dtype=jnp.float32)  # (made in float32 as above)
    real = jnp.finfo(s.dtype).dtype  # (the factors real: ldexp takes no complex; R is)
    return s * jnp.ldexp(one, half).astype(real) * jnp.ldexp(one, rest).astype(real)


def scaled_svd(x, full_matrices=True):
    """``svd`` of ``x`` scaled by a power of two per matrix, its singular values scaled back."""
    y, half, rest = _power_of_two_scaled(x)
    u, s, vh = svd(y, full_matrices=full_matrices)
    return u, _scaled_back(s, half, rest), vh


def svdvals(x):
    import jax.numpy as jnp

    return jnp.linalg.svdvals(x)


def scaled_svdvals(x):
    """``svdvals`` of ``x`` scaled by a power of two per matrix, scaled back."""
    y, half, rest = _power_of_two_scaled(x)
    return _scaled_back(svdvals(y), half, rest)


def eigh(x):
    import jax.numpy as jnp

    return tuple(jnp.linalg.eigh(x))


def scaled_eigh(x):
    """``eigh`` of ``x`` scaled by a power of two per matrix, its eigenvalues scaled back."""
    y, half, rest = _power_of_two_scaled(x)
    w, v = eigh(y)
    return _scaled_back(w, half, rest), v


def eigvalsh(x):
    import jax.numpy as jnp

    return jnp.linalg.eigvalsh(x)


def scaled_eigvalsh(x):
    """``eigvalsh`` of ``x`` scaled by a power of two per matrix, scaled back."""
    y, half, rest = _power_of_two_scaled(x)
    return _scaled_back(eigvalsh(y), half, rest)


def qr(x, mode="reduced"):
    import jax.numpy as jnp

    return tuple(jnp.linalg.qr(x, mode=mode))


def scaled_qr(x, mode="reduced"):
    """``qr`` of ``x`` scaled by a power of two per matrix, R scaled back."""
    y, half, rest = _power_of_two_scaled(x)
    q, r = qr(y, mode=mode)
    return q, _scaled_back(r, half[..., None], rest[..., None])
