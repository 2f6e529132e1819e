"""Rules for linear algebra (``arrayx/api/linalg.py``).

Products are bilinear; their transposes contract the cotangent with the other
operand.  Decompositions use the standard matrix-calculus results, with the
coefficients computed from primals so that only products with the tangent are
recorded under reverse mode:

- inv: d(X^-1) = -X^-1 dX X^-1;  det: d det = det * sum(X^-T * dX);  slogdet likewise;
- solve: dX = A^-1 (dB - dA X);
- cholesky: dL = L Phi(L^-1 dA L^-H) with Phi the lower triangle, diagonal halved;
- eigh: dw = diag(V^H dA V), dV = V (F * (V^H dA V)) with F_ij = 1 / (w_j - w_i);
- qr (m >= n): C = Q^H dA R^-1, Omega = the skew part of C's strict lower triangle,
  dQ = Q (Omega - C) + dA R^-1, dR = (C - Omega) R;
- svd (real): dS = diag(U^T dA V) and the usual F-weighted formulas for dU, dV;
- eig: with C = V^-1 dA V, dw = diag(C), dV = V (F * C) with F_ij = 1 / (w_j - w_i),
  minus V diag(Re(V^H dV)) so the columns keep unit norm, and turned by i*theta_i so
  each column's largest entry stays real (LAPACK's and JAX's convention); eigvals
  uses dw alone.

As in JAX, eigh and cholesky differentiate the symmetrised input.  ``matrix_norm``,
``pinv``, ``matrix_power``, ``outer`` and ``matrix_rank`` are compositions and
need no rules.  eig/eigvals of real matrices are complex: the real tangent is cast
to complex (so the cotangent of a real input keeps the real part).
"""
from __future__ import annotations

import math

from arrayx import api as ax
from arrayx import linalg as linalg_ext  # the linalg extension (arrayx.linalg), not arrayx.api.linalg
from arrayx.api import _dtypes
from arrayx.api._checks import broadcast_shapes_for
from arrayx.api._index_updates import at_update
from arrayx.api import linalg as la
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import (
    defabstract, defbilinear, deflinear, is_undefined, unbroadcast, zeros_for,
)


def _mT(x):
    return ax.matrix_transpose(x)


def _H(x):
    """Conjugate transpose of the last two dimensions."""
    t = ax.matrix_transpose(x)
    return ax.conj(t) if x.dtype.kind == "c" else t


def _conj(x):
    return ax.conj(x) if x.dtype.kind == "c" else x


def _real(x):
    return ax.real(x) if x.dtype.kind == "c" else x


def _eye_like(x, n=None):
    n = x.shape[-1] if n is None else n
    return ax.eye(n, dtype=x.dtype, device=x.device)


def _symmetrize(t):
    return (t + _H(t)) * 0.5


# -- abstract evaluation ------------------------------------------------------------------------------


def _matmul_abstract(x1, x2):
    s1, s2 = tuple(x1.shape), tuple(x2.shape)
    if len(s1) == 1 and len(s2) == 1:
        shape = ()
    elif len(s1) == 1:
        shape = s2[:-2] + s2[-1:]
    elif len(s2) == 1:
        shape = s1[:-1]
    else:
        shape = broadcast_shapes_for("matmul", s1[:-2], s2[:-2]) + (s1[-2], s2[-1])
    return ShapeDtypeStruct(shape, x1.dtype)


defabstract(la.matmul_p, _matmul_abstract)


def _real_dtype(dtype):
    return _dtypes.REAL_OF.get(dtype, dtype)


def _complex_dtype(dtype):
    return _dtypes.COMPLEX_OF.get(dtype, dtype)


def _same(x, *_, **__):
    return ShapeDtypeStruct(x.shape, x.dtype)


def _batch(x):
    return tuple(x.shape[:-2])


def _solve_abstract(a, b):
    if b.ndim == 1:
        return ShapeDtypeStruct(_batch(a) + tuple(b.shape), b.dtype)
    return ShapeDtypeStruct(tuple(b.shape), b.dtype)


def _qr_abstract(x, *, mode):
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n) if mode == "reduced" else m
    return (ShapeDtypeStruct(_batch(x) + (m, k), x.dtype),
            ShapeDtypeStruct(_batch(x) + (k, n), x.dtype))


def _svd_abstract(x, *, full_matrices):
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    real = _real_dtype(x.dtype)
    return (ShapeDtypeStruct(_batch(x) + ((m, m) if full_matrices else (m, k)), x.dtype),
            ShapeDtypeStruct(_batch(x) + (k,), real),
            ShapeDtypeStruct(_batch(x) + ((n, n) if full_matrices else (k, n)), x.dtype))


def _diagonal_abstract(x, *, offset):
    n, m = x.shape[-2], x.shape[-1]
    length = max(0, min(n + min(offset, 0), m - max(offset, 0)))
    return ShapeDtypeStruct(_batch(x) + (length,), x.dtype)


def _tensordot_abstract(x1, x2, *, axes):
    a1, a2 = axes
    shape = tuple(d for i, d in enumerate(x1.shape) if i not in a1) + tuple(
        d for j, d in enumerate(x2.shape) if j not in a2)
    return ShapeDtypeStruct(shape, x1.dtype)


def _vecdot_abstract(x1, x2, *, axis):
    shape = list(x1.shape)
    del shape[axis]
    return ShapeDtypeStruct(tuple(shape), x1.dtype)


def _vector_norm_abstract(x, *, axis, keepdims, ord):
    axes = range(x.ndim) if axis is None else axis
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return ShapeDtypeStruct(shape, _real_dtype(x.dtype))


for _p in (la.inv_p, la.cholesky_p, la.cross_p):
    defabstract(_p, _same)
defabstract(la.solve_p, _solve_abstract)
defabstract(la.det_p, lambda x: ShapeDtypeStruct(_batch(x), x.dtype))
defabstract(la.slogdet_p, lambda x: (ShapeDtypeStruct(_batch(x), x.dtype),
                                     ShapeDtypeStruct(_batch(x), _real_dtype(x.dtype))))
defabstract(la.trace_p, lambda x, *, offset: ShapeDtypeStruct(_batch(x), x.dtype))
defabstract(la.eigh_p, lambda x: (ShapeDtypeStruct(tuple(x.shape[:-1]), _real_dtype(x.dtype)),
                                  ShapeDtypeStruct(tuple(x.shape), x.dtype)))
defabstract(la.eigvalsh_p, lambda x: ShapeDtypeStruct(tuple(x.shape[:-1]), _real_dtype(x.dtype)))
defabstract(la.svdvals_p, lambda x: ShapeDtypeStruct(_batch(x) + (min(x.shape[-2:]),), _real_dtype(x.dtype)))
defabstract(la.qr_p, _qr_abstract)
defabstract(la.svd_p, _svd_abstract)
defabstract(la.diagonal_p, _diagonal_abstract)
defabstract(la.tensordot_p, _tensordot_abstract)
defabstract(la.vecdot_p, _vecdot_abstract)
defabstract(la.vector_norm_p, _vector_norm_abstract)
defabstract(la.matrix_transpose_p, lambda x: ShapeDtypeStruct(tuple(x.shape[:-2]) + (x.shape[-1], x.shape[-2]), x.dtype))


# -- matmul ------------------------------------------------------------------------------------------------


def _matmul_lhs(ct, x1, x2):
    if x1.ndim == 1 and x2.ndim == 1:
        return ct * x2
    if x2.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return ax.expand_dims(ct, axis=-1) * x2
    if x1.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        if x2.ndim == 2:
            return ax.matmul(x2, ct)
        r = ax.matmul(x2, ax.expand_dims(ct, axis=-1))[..., 0]
        return unbroadcast(r, x1.shape)
    return unbroadcast(ax.matmul(ct, _mT(x2)), x1.shape)  # stacks broadcast: sum them back


def _matmul_rhs(ct, x1, x2):
    if x1.ndim == 1 and x2.ndim == 1:
        return ct * x1
    if x1.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return ax.expand_dims(x1, axis=-1) * ax.expand_dims(ct, axis=-2)
    if x2.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        if x1.ndim == 2:
            return ax.matmul(ct, x1)
        r = ax.matmul(_mT(x1), ax.expand_dims(ct, axis=-1))[..., 0]
        return unbroadcast(r, x2.shape)
    return unbroadcast(ax.matmul(_mT(x1), ct), x2.shape)


defbilinear(la.matmul_p, _matmul_lhs, _matmul_rhs)
deflinear(la.matrix_transpose_p, lambda ct, x: (_mT(ct),))


# -- tensordot, vecdot, cross ----------------------------------------------------------------------------------


def _argsort(seq):
    return tuple(sorted(range(len(seq)), key=seq.__getitem__))


def _tensordot_lhs(ct, x1, x2, *, axes):
    a1, a2 = axes
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [j for j in range(x2.ndim) if j not in a2]
    r = ax.tensordot(ct, x2, axes=(tuple(range(len(free1), len(free1) + len(free2))), tuple(free2)))
    # r's axes: free1, then x2's contracted axes in increasing order -> the matching x1 axes
    order = free1 + [a1[a2.index(j)] for j in sorted(a2)]
    return ax.permute_dims(r, _argsort(order)) if r.ndim else r


def _tensordot_rhs(ct, x1, x2, *, axes):
    a1, a2 = axes
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [j for j in range(x2.ndim) if j not in a2]
    r = ax.tensordot(x1, ct, axes=(tuple(free1), tuple(range(len(free1)))))
    order = [a2[a1.index(i)] for i in sorted(a1)] + free2
    return ax.permute_dims(r, _argsort(order)) if r.ndim else r


defbilinear(la.tensordot_p, _tensordot_lhs, _tensordot_rhs)


def _vecdot_lhs(ct, x1, x2, *, axis):
    return _conj(ax.expand_dims(ct, axis=axis) * x2)


def _vecdot_rhs(ct, x1, x2, *, axis):
    return ax.expand_dims(ct, axis=axis) * _conj(x1)


defbilinear(la.vecdot_p, _vecdot_lhs, _vecdot_rhs)

defbilinear(
    la.cross_p,
    lambda ct, x1, x2, *, axis: linalg_ext.cross(x2, ct, axis=axis),
    lambda ct, x1, x2, *, axis: linalg_ext.cross(ct, x1, axis=axis),
)


# -- trace, diagonal -----------------------------------------------------------------------------------------


def _trace_transpose(ct, x, *, offset):
    n, m = x.shape[-2], x.shape[-1]
    eye = ax.eye(n, m, k=offset, dtype=x.dtype, device=ct.device)
    return (ax.expand_dims(ct, axis=(-2, -1)) * eye,)


deflinear(la.trace_p, _trace_transpose)


def _diagonal_transpose(ct, x, *, offset):
    length = ct.shape[-1]
    base = ax.arange(length, device=ct.device)
    rows = base + max(0, -offset)
    cols = base + max(0, offset)
    return (at_update(zeros_for(x, ct), (Ellipsis, rows, cols), ct, "add"),)


deflinear(la.diagonal_p, _diagonal_transpose)


# -- inverse, determinants, solve -------------------------------------------------------------------------------


def _inv_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = la.inv_p.bind(x)
    return out, -ax.matmul(ax.matmul(out, t), out)


la.inv_p.jvp = _inv_jvp


def _det_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = la.det_p.bind(x)
    coef = ax.expand_dims(out, axis=(-2, -1)) * _mT(linalg_ext.inv(x))
    return out, ax.sum(t * coef, axis=(-2, -1))


la.det_p.jvp = _det_jvp


def _slogdet_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    sign, logabsdet = la.slogdet_p.bind(x)
    trace = ax.sum(t * _mT(linalg_ext.inv(x)), axis=(-2, -1))  # tr(X^-1 dX)
    t_log = _real(trace)
    t_sign = None
    if x.dtype.kind == "c":
        t_sign = sign * (trace - ax.astype(t_log, trace.dtype))
    return (sign, logabsdet), (t_sign, t_log)


la.slogdet_p.jvp = _slogdet_jvp


def _solve_vectors(a, v):
    """Solutions of a @ x = v for the vectors along v's last axis (batches broadcast)."""
    return linalg_ext.solve(a, ax.expand_dims(v, axis=-1))[..., 0]


def _solve_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    out = la.solve_p.bind(a, b)
    tout = None
    if tb is not None:
        tout = la.solve_p.bind(a, tb)
    if ta is not None:
        if b.ndim == 1:
            c = -_solve_vectors(a, ax.matmul(ta, ax.expand_dims(out, axis=-1))[..., 0])
        else:
            c = -linalg_ext.solve(a, ax.matmul(ta, out))
        tout = c if tout is None else tout + c
    return out, tout


def _solve_transpose(ct, a, b):
    if is_undefined(a):
        raise ValueError("solve: not linear in its matrix operand")
    if b.ndim == 1:
        return (None, unbroadcast(_solve_vectors(_mT(a), ct), b.shape))
    return (None, linalg_ext.solve(_mT(a), ct))


la.solve_p.jvp = _solve_jvp
la.solve_p.transpose = _solve_transpose


# -- factorizations ----------------------------------------------------------------------------------------------


def _cholesky_jvp(primals, tangents, *, upper):
    (x,), (t,) = primals, tangents
    out = la.cholesky_p.bind(x, upper=upper)
    low = _H(out) if upper else out
    low_inv = linalg_ext.inv(low)
    n = x.shape[-1]
    eye = _eye_like(x)
    keep = ax.tril(ax.ones((n, n), dtype=x.dtype, device=x.device)) - 0.5 * eye  # Phi as a mask
    inner = ax.matmul(ax.matmul(low_inv, _symmetrize(t)), _H(low_inv))
    t_low = ax.matmul(low, inner * keep)
    return out, _H(t_low) if upper else t_low


la.cholesky_p.jvp = _cholesky_jvp


def _eigh_parts(x, t, w, v):
    """(V^H dA_sym V, the coefficient matrix F) for eigh's derivative."""
    eye = _eye_like(v)
    vtv = ax.matmul(ax.matmul(_H(v), _symmetrize(t)), v)
    gaps = ax.expand_dims(w, axis=-2) - ax.expand_dims(w, axis=-1)
    f = 1.0 / (ax.astype(gaps, v.dtype) + eye) - eye
    return vtv, f


def _eigh_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    w, v = la.eigh_p.bind(x)
    vtv, f = _eigh_parts(x, t, w, v)
    tw = _real(linalg_ext.diagonal(vtv))
    tv = ax.matmul(v, f * vtv)
    return (w, v), (tw, tv)


la.eigh_p.jvp = _eigh_jvp


def _eigvalsh_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = la.eigvalsh_p.bind(x)
    _, v = la.eigh_p.bind(x)
    # dw_i = v_i^H dA v_i
    tw = ax.sum(_conj(v) * ax.matmul(_symmetrize(t), v), axis=-2)
    return out, _real(tw)


la.eigvalsh_p.jvp = _eigvalsh_jvp


def _as_complex(x):
    dtype = _dtypes.COMPLEX_OF.get(x.dtype, x.dtype)
    return x if x.dtype == dtype else ax.astype(x, dtype)


def _tangent_as(t, out):
    """The complex tangent ``t`` in the dtype of ``out`` (executors may return real spectra as real)."""
    if out.dtype.kind == "c":
        return t
    t = ax.real(t)
    return t if t.dtype == out.dtype else ax.astype(t, out.dtype)


def _eig_rotated(t, v):
    """C = V^-1 dA V (complex), whose diagonal is the eigenvalues' tangent."""
    return linalg_ext.solve(v, ax.matmul(_as_complex(t), v))


def _eig_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    w, v = la.eig_p.bind(x)
    wc, vc = _as_complex(w), _as_complex(v)
    c = _eig_rotated(t, vc)
    eye = _eye_like(vc)
    gaps = ax.expand_dims(wc, axis=-2) - ax.expand_dims(wc, axis=-1)  # [i, j] = w_j - w_i
    f = 1.0 / (gaps + eye) - eye
    tv = ax.matmul(vc, f * c)
    # unit-norm columns: remove the component of dv_i along v_i that changes |v_i|
    stretch = _real(ax.sum(_conj(vc) * tv, axis=-2, keepdims=True))
    tv = tv - vc * ax.astype(stretch, vc.dtype)
    # LAPACK's geev makes each column's largest-modulus entry real: turn dv_i to keep it real
    pivot_row = ax.argmax(ax.abs(vc), axis=-2, keepdims=True)
    pivot = ax.real(ax.take_along_axis(vc, pivot_row, axis=-2))
    turn = ax.imag(ax.take_along_axis(tv, pivot_row, axis=-2)) / pivot
    tv = tv - vc * (ax.astype(turn, vc.dtype) * 1j)
    return (w, v), (_tangent_as(linalg_ext.diagonal(c), w), _tangent_as(tv, v))


la.eig_p.jvp = _eig_jvp


def _eigvals_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = la.eigvals_p.bind(x)
    w, v = la.eig_p.bind(x)
    tw = linalg_ext.diagonal(_eig_rotated(t, _as_complex(v)))
    # eigvals need not list the eigenvalues in eig's order: pair each with the nearest of eig's
    gaps = ax.expand_dims(_as_complex(out), axis=-1) - ax.expand_dims(_as_complex(w), axis=-2)
    nearest = ax.argmin(ax.abs(gaps), axis=-1)
    return out, _tangent_as(ax.take_along_axis(tw, nearest, axis=-1), out)


la.eigvals_p.jvp = _eigvals_jvp


def _qr_jvp(primals, tangents, *, mode):
    (x,), (t,) = primals, tangents
    q, r = la.qr_p.bind(x, mode=mode)
    m, n = x.shape[-2], x.shape[-1]
    if m < n or (mode == "complete" and m != n):
        raise NotImplementedError(
            f"qr: derivatives are implemented for matrices with at least as many rows as columns "
            f"(mode='reduced'), got shape {tuple(x.shape)} with mode={mode!r}"
        )
    r_inv = linalg_ext.inv(r)
    t_rinv = ax.matmul(t, r_inv)
    c = ax.matmul(_H(q), t_rinv)
    low = ax.tril(c, k=-1)
    omega = low - _H(low)
    if x.dtype.kind == "c":  # the diagonal of Q^H dQ is imaginary: keep C's imaginary diagonal
        eye = _eye_like(c)
        omega = omega + eye * (c - ax.astype(ax.real(c), c.dtype))
    tq = ax.matmul(q, omega - c) + t_rinv
    tr = ax.matmul(c - omega, r)
    return (q, r), (tq, tr)


la.qr_p.jvp = _qr_jvp


def _svd_core(x, t, u, s, vh):
    """(dP = U^T dA V, ds) of the reduced SVD."""
    v = _H(vh)
    dp = ax.matmul(ax.matmul(_H(u), t), v)
    return dp, _real(linalg_ext.diagonal(dp)), v


def _svd_jvp(primals, tangents, *, full_matrices):
    (x,), (t,) = primals, tangents
    u, s, vh = la.svd_p.bind(x, full_matrices=full_matrices)
    m, n = x.shape[-2], x.shape[-1]
    if x.dtype.kind == "c":
        raise NotImplementedError("svd: derivatives of U and Vh are implemented for real matrices only; use svdvals")
    if full_matrices and m != n:
        raise NotImplementedError(
            f"svd: derivatives with full_matrices=True need a square matrix, got shape {tuple(x.shape)}; "
            f"pass full_matrices=False"
        )
    dp, ds, v = _svd_core(x, t, u, s, vh)
    s_row = ax.expand_dims(s, axis=-2)  # s_j along columns
    s_col = ax.expand_dims(s, axis=-1)  # s_i along rows
    eye = _eye_like(dp)
    f = 1.0 / (s_row * s_row - s_col * s_col + eye) - eye
    dpt = _mT(dp)
    du = ax.matmul(u, f * (dp * s_row + s_col * dpt))
    dv = ax.matmul(v, f * (s_col * dp + dpt * s_row))
    if m > n:
        du = du + (ax.matmul(t, v) - ax.matmul(u, dp)) / s_row
    if n > m:
        dv = dv + (ax.matmul(_mT(t), u) - ax.matmul(v, dpt)) / s_row
    return (u, s, vh), (du, ds, _mT(dv))


la.svd_p.jvp = _svd_jvp


def _svdvals_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = la.svdvals_p.bind(x)
    u, s, vh = la.svd_p.bind(x, full_matrices=False)
    _, ds, _ = _svd_core(x, t, u, s, vh)
    return out, ds


la.svdvals_p.jvp = _svdvals_jvp


# -- norms ----------------------------------------------------------------------------------------------------------


def _vector_norm_jvp(primals, tangents, *, axis, keepdims, ord):
    (x,), (t,) = primals, tangents
    out = la.vector_norm_p.bind(x, axis=axis, keepdims=keepdims, ord=ord)
    if ord == 0:
        return out, None
    real = out.dtype
    full = out if keepdims else ax.reshape(out, _keepdims_shape(x.shape, axis))
    full = ax.astype(full, real) if full.dtype != real else full
    mag = ax.abs(x)
    sign = ax.sign(x)  # x / |x| (0 at 0)
    if math.isinf(ord):
        hit = ax.astype(mag == full, real)
        weight = hit / ax.sum(hit, axis=axis, keepdims=True)
    elif ord == 1:
        weight = ax.ones_like(mag)
    else:
        weight = _norm_ratio(mag, full, axis, ord)
        weight = weight if ord == 2 else weight ** (ord - 1)
    coef = _conj(sign) * ax.astype(weight, x.dtype) if x.dtype.kind == "c" else sign * weight
    contribution = _real(t * coef)
    tout = ax.sum(contribution, axis=axis, keepdims=keepdims)
    if tout.dtype != out.dtype:
        tout = ax.astype(tout, out.dtype)
    return out, tout


def _norm_ratio(mag, full, axis, ord):
    """|x| / ||x||_p, from x scaled by its largest |x| where that is finite and nonzero: the forward's
    sum of powers may have under- or overflowed (NumPy's 2-norm does not scale: ||[-4.6e-162]|| is
    4.4e-162, so |x| / ||x|| was 1.027)."""
    safe = ax.where(full == 0, ax.ones_like(full), full)
    plain = ax.where(full == 0, ax.zeros_like(mag), mag / safe)
    if math.prod(mag.shape) == 0:
        return plain
    top = ax.max(mag, axis=axis, keepdims=True)
    good = (top > 0) & ax.isfinite(top)
    scaled = mag / ax.where(good, top, ax.ones_like(top))
    norm = la.vector_norm_p.bind(scaled, axis=axis, keepdims=True, ord=ord)
    norm = ax.astype(norm, mag.dtype) if norm.dtype != mag.dtype else norm
    return ax.where(good, scaled / ax.where(good, norm, ax.ones_like(norm)), plain)


def _keepdims_shape(shape, axis):
    axes = range(len(shape)) if axis is None else axis
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


la.vector_norm_p.jvp = _vector_norm_jvp

# eig/eigvals: complex results (the primitive's contract; see the executors' "eig" entries)
defabstract(la.eig_p, lambda x: (ShapeDtypeStruct(tuple(x.shape[:-1]), _complex_dtype(x.dtype)),
                                 ShapeDtypeStruct(tuple(x.shape), _complex_dtype(x.dtype))))
defabstract(la.eigvals_p, lambda x: ShapeDtypeStruct(tuple(x.shape[:-1]), _complex_dtype(x.dtype)))


# -- batching: matrix functions map over leading axes; products take the batch natively --------

from arrayx.transforms.rules._batch import (  # noqa: E402
    BATCH_RULES, defleading, full_batch, size_of, to_front,
)

defleading(la.matrix_transpose_p, la.cholesky_p, la.det_p, la.diagonal_p, la.eig_p, la.eigh_p, la.eigvals_p,
           la.eigvalsh_p, la.inv_p, la.qr_p, la.slogdet_p, la.svd_p, la.svdvals_p, la.trace_p)


def _matmul_batch(vals, dims):
    (x1, x2), (d1, d2) = vals, dims
    r1 = x1.ndim - (d1 is not None)
    r2 = x2.ndim - (d2 is not None)
    # a batch of vectors against one matrix (or vector) is a single matrix product (one GEMM, not
    # a stack of matrix-vector products): the per-example layers of vmap(grad(mlp))
    if r1 == 1 and d2 is None and r2 <= 2:
        return la.matmul_p.bind(to_front(x1, d1), x2), 0
    if r2 == 1 and d1 is None and r1 == 2:  # A @ v per member: V @ A.T, batch-major like V (no transposed result)
        return la.matmul_p.bind(to_front(x2, d2), ax.matrix_transpose(x1)), 0
    if d1 is not None:
        x1 = to_front(x1, d1)
    if d2 is not None:
        x2 = to_front(x2, d2)
    if r1 == 1:
        x1 = ax.expand_dims(x1, axis=-2)  # a vector is one row ...
    if r2 == 1:
        x2 = ax.expand_dims(x2, axis=-1)  # ... or one column, removed afterwards
    # the batch axis must stay left of the other operand's stack axes: pad batched operands
    # with size-1 axes after it; unbatched operands broadcast from the left as they are
    rank = max(x.ndim + (d is None) for x, d in ((x1, d1), (x2, d2)))
    if d1 is not None and x1.ndim < rank:
        x1 = ax.reshape(x1, (x1.shape[0],) + (1,) * (rank - x1.ndim) + tuple(x1.shape[1:]))
    if d2 is not None and x2.ndim < rank:
        x2 = ax.reshape(x2, (x2.shape[0],) + (1,) * (rank - x2.ndim) + tuple(x2.shape[1:]))
    out = la.matmul_p.bind(x1, x2)
    if r2 == 1:
        out = ax.squeeze(out, axis=-1)
    if r1 == 1:
        out = ax.squeeze(out, axis=-1 if r2 == 1 else -2)
    return out, 0


def _tensordot_batch(vals, dims, *, axes):
    (x1, x2), (d1, d2) = vals, dims
    a1, a2 = axes
    if d2 is None:
        x1 = to_front(x1, d1)
        return la.tensordot_p.bind(x1, x2, axes=(tuple(a + 1 for a in a1), a2)), 0
    if d1 is None:
        x2 = to_front(x2, d2)
        return la.tensordot_p.bind(x1, x2, axes=(a1, tuple(a + 1 for a in a2))), x1.ndim - len(a1)
    # both batched: (B, free1, K) @ (B, K, free2), a batched matmul
    x1, x2 = to_front(x1, d1), to_front(x2, d2)
    size = x1.shape[0]
    f1 = [i for i in range(1, x1.ndim) if i - 1 not in a1]
    f2 = [i for i in range(1, x2.ndim) if i - 1 not in a2]
    k = 1
    for a in a1:
        k *= x1.shape[a + 1]
    free1 = tuple(x1.shape[i] for i in f1)
    free2 = tuple(x2.shape[i] for i in f2)
    # sizes spelled out, not -1: a size-0 operand leaves -1 undetermined
    m1 = ax.reshape(ax.permute_dims(x1, (0, *f1, *(a + 1 for a in a1))), (size, math.prod(free1), k))
    m2 = ax.reshape(ax.permute_dims(x2, (0, *(a + 1 for a in a2), *f2)), (size, k, math.prod(free2)))
    return ax.reshape(la.matmul_p.bind(m1, m2), (size,) + free1 + free2), 0


def _vecdot_batch(vals, dims, *, axis):
    size = size_of(vals, dims)
    shapes = [v.shape if d is None else v.shape[:d] + v.shape[d + 1:] for v, d in zip(vals, dims)]
    shape = broadcast_shapes_for("vecdot", *shapes)
    x1, x2 = (full_batch(v, d, size, shape) for v, d in zip(vals, dims))
    return la.vecdot_p.bind(x1, x2, axis=axis), 0


for _prim, _rule in ((la.matmul_p, _matmul_batch), (la.tensordot_p, _tensordot_batch),
                     (la.vecdot_p, _vecdot_batch)):
    _prim.batch = _rule
    BATCH_RULES[_prim.name] = "native"

from arrayx.transforms.rules._batch import defaxes  # noqa: E402

defaxes(la.vector_norm_p, "axis")


def _solve_batch(vals, dims):
    (a, b), (da, db) = vals, dims
    size = size_of(vals, dims)
    one_vector = b.ndim - (db is not None) == 1  # x2 of shape (M,): one right-hand side per member
    if one_vector and da is None and a.ndim == 2:  # one matrix: the members' vectors are its right-hand sides
        return la.solve_p.bind(a, ax.moveaxis(b, db, -1)), 1
    a, b = full_batch(a, da, size, _member(a, da)), full_batch(b, db, size, _member(b, db))
    if one_vector:  # each member's vector as one column, against every matrix of the member's stack
        batch, m = tuple(a.shape[:-2]), a.shape[-1]
        column = ax.reshape(b, (size,) + (1,) * (len(batch) - 1) + (m, 1))
        return ax.squeeze(la.solve_p.bind(a, ax.broadcast_to(column, batch + (m, 1))), axis=-1), 0
    return la.solve_p.bind(a, b), 0


def _member(v, d) -> tuple:
    shape = tuple(v.shape)
    return shape if d is None else shape[:d] + shape[d + 1:]


def _cross_batch(vals, dims, *, axis):
    # operands share one shape (the public function broadcast them) and axis counts from the end
    size = size_of(vals, dims)
    shape = next(_member(v, d) for v, d in zip(vals, dims))
    x1, x2 = (full_batch(v, d, size, shape) for v, d in zip(vals, dims))
    return la.cross_p.bind(x1, x2, axis=axis if axis < 0 else axis + 1), 0


for _prim, _rule in ((la.solve_p, _solve_batch), (la.cross_p, _cross_batch)):
    _prim.batch = _rule
    BATCH_RULES[_prim.name] = "native"
