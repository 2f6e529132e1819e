"""The JAX executor's ``linalg.svd``: a tall, thin float64 matrix through CholeskyQR2's matrix
products (``executors/common/tall_svd.py``: the algorithm, its accuracy and where it applies), in
one XLA program whose ``lax.cond`` runs ``jax.numpy.linalg.svd`` (LAPACK's gesdd) instead where
CholeskyQR2 would not be as accurate: no value leaves the device to decide.  Anything else is
``jax.numpy.linalg.svd`` itself."""
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
        return jnp.linalg.svd(x, full_matrices=full_matrices)
    from jax import lax

    q1, r2, ur, s, vh, accurate = cholesky_qr2(x)

    def kept():
        return q1 @ lax.linalg.triangular_solve(r2, ur, left_side=True, lower=False), s, vh

    def lapack():
        return tuple(jnp.linalg.svd(x, full_matrices=False))

    return lax.cond(accurate, kept, lapack)
