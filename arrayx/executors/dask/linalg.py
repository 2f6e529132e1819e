"""The Dask executor's linalg, fft and contractions (the standard's extensions and matmul/tensordot/vecdot).

Dask's own linalg is 2-D only and needs special chunkings (tall-skinny QR, no full_matrices SVD,
no det/eigh/...), so every matrix function runs NumPy's (array-api-compat's) on blocks that hold
whole matrices, in parallel over the batch dimensions.  Dask is imported when a function first
runs, never when arrayx loads (``executor`` builds its table from these at import).
"""
from __future__ import annotations

import warnings

import numpy as np

from arrayx.executors.common import linalg as _linalg_rule

__all__ = ["LINALG", "FFT", "CONTRACTIONS"]


def _dask_array():
    import dask.array as da

    return da


def _compat():
    import array_api_compat.dask.array as dxp

    return dxp


# -- linalg --------------------------------------------------------------------------------------------

def _np_linalg(name):
    import array_api_compat.numpy as npx

    if name in _linalg_rule.FAILING:  # NaN for failing matrices, as on every executor
        return _linalg_rule.nan_on_failure(name)
    return getattr(npx.linalg, name)


def _real(dt):
    return np.empty((), dt).real.dtype


def _complex(dt):
    return np.result_type(dt, np.complex64)


def _gufunc(kernel, signature, *args, dtypes, sizes=None, axes=None):
    # each matrix whole in one block; Dask's own rechunking refuses core axes chunked unlike each other
    core = [len(c.split(",")) if c else 0 for c in signature.split("->")[0][1:-1].split("),(")]
    core_axes = axes or [tuple(range(-n, 0)) for n in core]
    args = tuple(a.rechunk({ax % a.ndim: -1 for ax in ca}) if ca else a for a, ca in zip(args, core_axes))
    with warnings.catch_warnings():  # Dask's meta inference casts complex samples to real and warns
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        out = _dask_array().apply_gufunc(kernel, signature, *args, output_dtypes=dtypes, output_sizes=sizes or {},
                              allow_rechunk=True, axes=axes)
    return tuple(out) if isinstance(out, (tuple, list)) else out


def _matrix(name, signature, dtype_of=lambda dt: dt):
    def impl(x):
        return _gufunc(_np_linalg(name), signature, x, dtypes=dtype_of(x.dtype))

    impl.__name__ = name
    return impl


def _eigh(x):
    return _gufunc(_np_linalg("eigh"), "(m,m)->(m),(m,m)", x, dtypes=[_real(x.dtype), x.dtype])


def _eig(x):
    c = _complex(x.dtype)
    return _gufunc(_np_linalg("eig"), "(m,m)->(m),(m,m)", x, dtypes=[c, c])


def _slogdet(x):
    return _gufunc(_np_linalg("slogdet"), "(m,m)->(),()", x, dtypes=[x.dtype, _real(x.dtype)])


def _cholesky(x, *, upper=False):
    return _gufunc(lambda b: _np_linalg("cholesky")(b, upper=upper), "(m,m)->(m,m)", x, dtypes=x.dtype)


def _qr(x, *, mode="reduced"):
    m, n = x.shape[-2:]
    sig = "(m,n)->(m,k),(k,n)" if mode == "reduced" else "(m,n)->(m,m),(m,n)"
    return _gufunc(lambda b: tuple(_np_linalg("qr")(b, mode=mode)), sig, x,
                   dtypes=[x.dtype, x.dtype], sizes={"k": min(m, n)})


def _svd(x, *, full_matrices=True):
    m, n = x.shape[-2:]
    k = min(m, n)
    sig = "(m,n)->(m,m),(k),(n,n)" if full_matrices else "(m,n)->(m,k),(k),(k,n)"
    return _gufunc(lambda b: tuple(_np_linalg("svd")(b, full_matrices=full_matrices)), sig, x,
                   dtypes=[x.dtype, _real(x.dtype), x.dtype], sizes={"k": k})


def _svdvals(x):
    return _gufunc(_np_linalg("svdvals"), "(m,n)->(k)", x, dtypes=_real(x.dtype), sizes={"k": min(x.shape[-2:])})


def _solve(x1, x2):
    sig = "(m,m),(m)->(m)" if x2.ndim == 1 else "(m,m),(m,k)->(m,k)"
    return _gufunc(_np_linalg("solve"), sig, x1, x2, dtypes=x1.dtype)


def _cross(x1, x2, *, axis=-1):
    shape = np.broadcast_shapes(x1.shape, x2.shape)
    da = _dask_array()
    x1, x2 = da.broadcast_to(x1, shape), da.broadcast_to(x2, shape)
    return _gufunc(lambda a, b: np.cross(a, b, axis=-1), "(i),(i)->(i)", x1, x2,
                   dtypes=np.result_type(x1.dtype, x2.dtype), axes=[(axis,), (axis,), (axis,)])


LINALG = {
    "cholesky": _cholesky,
    "cross": _cross,
    "det": _matrix("det", "(m,m)->()"),
    "eig": _eig,
    "eigh": _eigh,
    "eigvals": _matrix("eigvals", "(m,m)->(m)", _complex),
    "eigvalsh": _matrix("eigvalsh", "(m,m)->(m)", _real),
    "inv": _matrix("inv", "(m,m)->(m,m)"),
    "qr": _qr,
    "slogdet": _slogdet,
    "solve": _solve,
    "svd": _svd,
    "svdvals": _svdvals,
}


# -- fft ---------------------------------------------------------------------------------------------

def _fft(name):
    """Dask's FFTs need each transformed axis in one chunk: rechunk those axes first."""
    def impl(x, **params):
        axes = (params["axis"],) if "axis" in params else params.get("axes")
        axes = range(x.ndim) if axes is None else axes
        x = x.rechunk({a % x.ndim: -1 for a in axes}) if x.ndim else x
        return getattr(_compat().fft, name)(x, **params)

    impl.__name__ = name
    return impl


FFT = {name: _fft(name) for name in
       ("fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft")}

# -- contractions -------------------------------------------------------------------------------------

def _contraction(name):
    """Dask sums small integers in 64 bits: cast back to the promoted dtype (wrapping, as NumPy's
    fixed-width sums do: the 64-bit sum is exact modulo 2**64, so the cast gives the same bits)."""
    def impl(x1, x2, **params):
        if name == "matmul" and not _matmul_aligned(x1.shape, x2.shape):
            # Dask broadcasts a contracted dimension of size 1 and defers the error to the read;
            # the namespace's checked path then raises the error naming the shapes
            raise ValueError(f"matmul: shapes {x1.shape} and {x2.shape} do not align")
        out = getattr(_compat(), name)(x1, x2, **params)
        want = np.result_type(x1.dtype, x2.dtype)
        return out if out.dtype == want else out.astype(want)

    impl.__name__ = name
    return impl


def _matmul_aligned(s1: tuple, s2: tuple) -> bool:
    return bool(s1) and bool(s2) and s1[-1] == s2[0 if len(s2) == 1 else -2]


CONTRACTIONS = {name: _contraction(name) for name in ("tensordot", "matmul", "vecdot")}
