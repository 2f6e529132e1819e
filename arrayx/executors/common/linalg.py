"""One failure behaviour for linalg on singular / non-positive-definite input, on every executor.

The rule (docs/semantics.rst, linear algebra failures): ``inv`` and ``solve`` of a singular matrix and ``cholesky`` of a
matrix that is not positive definite never raise on values; the results of the matrices that
fail are NaN (all of that matrix's entries), the others are computed as usual.  A lazy or staged
executor cannot raise anyway (the values are unknown when the call is made), and JAX returns
inf/NaN there, so NaN is the one answer every executor can give.

Two ways to get there, one per kind of library:

- LAPACK wrappers that raise (NumPy, hence Numba and Dask's blocks): ``nan_on_failure`` catches
  ``LinAlgError`` around the call only; on failure the batch is redone matrix by matrix, so only
  the failing matrices become NaN (the extra cost is paid only when something failed).
- Libraries that return garbage instead (JAX, CuPy): ``checked`` wraps their function with
  ``nan_where_failed``, which decides from the result
  with one cheap reduction per matrix, as LAPACK decides: a zero pivot (``inv``/``solve``: a
  non-finite result from finite operands) or a non-positive pivot (``cholesky``: a diagonal
  entry of the factor that is not > 0).
"""
from __future__ import annotations

import numpy as np

#: the linalg primitives this rule covers (det/slogdet give 0/-inf already, pinv/lstsq never fail)
FAILING = ("cholesky", "inv", "solve")


def nan_on_failure(name: str):
    """array-api-compat NumPy's ``linalg.<name>`` with failing matrices giving NaN instead of LinAlgError."""
    import array_api_compat.numpy as npx

    fn = getattr(npx.linalg, name)

    def impl(x, *rest, **params):
        try:
            return fn(x, *rest, **params)
        except np.linalg.LinAlgError:
            return _one_by_one(fn, x, rest, params)

    impl.__name__ = name
    return impl


def _one_by_one(fn, x, rest, params):
    """``fn`` over the batch of ``x`` one matrix at a time, NaN for those that fail."""
    x = np.asarray(x)
    rest = tuple(np.asarray(r) for r in rest)
    batch = x.shape[:-2]
    core = rest[0].shape if rest and rest[0].ndim == 1 else (rest[0].shape[-2:] if rest else x.shape[-2:])
    out = np.full(batch + core, np.nan, dtype=x.dtype)
    for idx in np.ndindex(*batch):
        args = tuple(r if r.ndim == 1 else r[idx] for r in rest)
        try:
            out[idx] = fn(x[idx], *args, **params)
        except np.linalg.LinAlgError:
            pass  # stays NaN
    return out


def checked(name: str, namespace):
    """``namespace().linalg.<name>`` with the matrices that fail set to NaN, for libraries that do not
    raise (JAX, CuPy); ``namespace`` is called on each call (the library is loaded lazily)."""
    def impl(x, *rest, **params):
        xp = namespace()
        out = getattr(xp.linalg, name)(x, *rest, **params)
        return nan_where_failed(xp, name, out, x, *rest)

    impl.__name__ = name
    return impl


def nan_where_failed(xp, name: str, out, x, *rest, upper: bool = False):
    """``out`` (``name``'s result on ``x``, ``rest``) with the matrices LAPACK would reject set to NaN."""
    if name == "cholesky":
        diag = xp.real(xp.diagonal(out, axis1=-2, axis2=-1))
        failed = ~xp.all(diag > 0, axis=-1)  # NaN compares False, so NaN pivots fail too
    else:
        core = (-1,) if rest and rest[0].ndim == 1 else (-2, -1)
        finite_in = xp.all(xp.isfinite(x), axis=(-2, -1))
        for r in rest:
            finite_in = finite_in & xp.all(xp.isfinite(r), axis=(-1,) if r.ndim == 1 else (-2, -1))
        failed = finite_in & ~xp.all(xp.isfinite(out), axis=core)
    expand = (...,) + (None,) * (out.ndim - failed.ndim)
    return xp.where(failed[expand], xp.asarray(np.nan, dtype=out.dtype), out)
