"""Linear algebra: the main namespace's (matmul, tensordot, vecdot, matrix_transpose) and the linalg extension."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.strategies import Input
from conformance.differential.table._core import SIGNATURES, VIEWS, _dt, add


def _matmul(draw, fn):
    m, k, n = (draw(st.integers(0, 3)) for _ in range(3))
    batch = draw(S.shapes(0, 2))
    left = draw(st.sampled_from([(k,), (m, k), batch + (m, k)]))
    right = draw(st.sampled_from([(k,), (k, n), batch[len(batch) // 2:] + (k, n)]))
    d1, d2 = _dt(draw, fn), _dt(draw, fn)
    return (draw(S.inputs(d1, left, fn.values)), draw(S.inputs(d2, right, fn.values))), {}


def _vecdot(draw, fn):
    s1, s2 = draw(S.broadcast_pair(min_dims=1))
    k = draw(st.integers(0, 3))
    s1, s2 = s1[:-1] + (k,), s2[:-1] + (k,)
    d1 = _dt(draw, fn)
    d2 = d1 if draw(st.booleans()) else _dt(draw, fn)
    kw = {"axis": -1} if draw(st.booleans()) else {}
    return (draw(S.inputs(d1, s1, fn.values)), draw(S.inputs(d2, s2, fn.values))), kw


def _tensordot(draw, fn):
    a = draw(S.shapes(0, 3))
    n = draw(st.integers(0, len(a)))
    b = a[len(a) - n:] + draw(S.shapes(0, 2))
    d1, d2 = _dt(draw, fn), _dt(draw, fn)
    kw = {"axes": n} if draw(st.booleans()) or n != 2 else {}
    return (draw(S.inputs(d1, a, fn.values)), draw(S.inputs(d2, b, fn.values))), kw


_MATRIX_KINDS = {
    "finite": lambda a, n: a,
    "bounded": lambda a, n: a,
    "wellcond": lambda a, n: a + 2 * max(n, 1) * np.eye(*a.shape[-2:]),
    "spd": lambda a, n: a @ np.conj(np.swapaxes(a, -1, -2)) + max(n, 1) * np.eye(n),
    "hermitian": lambda a, n: (a + np.conj(np.swapaxes(a, -1, -2))) / 2,
}


def _matrix(draw, fn, square):
    dt = _dt(draw, fn)
    batch = draw(S.shapes(0, 2))
    m = draw(st.integers(0, 4))
    n = m if square else draw(st.integers(0, 4))
    shape = batch + (m, n)
    kind = fn.values if fn.values in _MATRIX_KINDS else "bounded"
    x = draw(S.inputs(dt, shape, "bounded" if kind in ("finite", "bounded") else "unit"))
    if kind not in ("finite", "bounded") and np.dtype(dt).kind in "fc":
        v = _MATRIX_KINDS[kind](x.values.astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64), n)
        x = Input(v.astype(dt), x.layout)
    return (x,), {}


def _solve(draw, fn):
    (a,), _ = _matrix(draw, fn, square=True)
    n = a.values.shape[-1]
    b_shape = draw(st.sampled_from([(n,), a.values.shape[:-1] + (draw(st.integers(0, 3)),)]))
    return (a, draw(S.inputs(_dt(draw, fn), b_shape, "bounded"))), {}


def _matrix_power(draw, fn):
    (a,), _ = _matrix(draw, fn, square=True)
    return (a, draw(st.integers(-2, 3))), {}


def _cross(draw, fn):
    s1, s2 = draw(S.broadcast_pair(0, 2))
    d1 = _dt(draw, fn)
    d2 = d1 if draw(st.booleans()) else _dt(draw, fn)
    return (draw(S.inputs(d1, s1 + (3,), fn.values)), draw(S.inputs(d2, s2 + (3,), fn.values))), {}


def _outer(draw, fn):
    return (draw(S.inputs(_dt(draw, fn), (draw(st.integers(0, 4)),), fn.values)),
            draw(S.inputs(_dt(draw, fn), (draw(st.integers(0, 4)),), fn.values))), {}


SIGNATURES.update(matmul=_matmul, vecdot=_vecdot, tensordot=_tensordot, solve=_solve, matrix_power=_matrix_power,
                  cross=_cross, outer=_outer, matrix=lambda draw, fn: _matrix(draw, fn, square=False),
                  square=lambda draw, fn: _matrix(draw, fn, square=True))

# -- views: the unique quantities of results unique only up to sign or phase --------------------------


def _mH(xp, a):
    t = xp.matrix_transpose(a)
    return xp.conj(t) if xp.isdtype(a.dtype, "complex floating") else t


def _eigh_view(xp, r):
    w, q = r
    return w, (q * w[..., None, :]) @ _mH(xp, q)


def _svd_view(xp, r):
    u, s, vh = r
    k = s.shape[-1]
    return s, (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], u.shape, vh.shape


def _qr_view(xp, r):
    q, rr = r
    k = min(q.shape[-1], rr.shape[-2])
    return q @ rr, xp.abs(xp.linalg.diagonal(rr)), _mH(xp, q[..., :, :k]) @ q[..., :, :k], q.shape, rr.shape


VIEWS.update(eigh=_eigh_view, svd=_svd_view, qr=_qr_view)

add("matmul", "matmul", "numeric", "bounded", tolerance="reduction")
add("matrix_transpose", "matrix_rank2", "any", tolerance="exact")
add("tensordot", "tensordot", "numeric", "bounded", tolerance="reduction")
add("vecdot", "vecdot", "numeric", "bounded", tolerance="reduction")

# linalg
add("linalg.cholesky", "square", "floating", "spd", kw=("upper",), tolerance="linalg")
add("linalg.cross", "cross", "numeric", "bounded", kw=("axis_int",), tolerance="reduction")
add("linalg.det", "square", "floating", "wellcond", tolerance="linalg")
add("linalg.diagonal", "matrix", "any", kw=("offset",), tolerance="exact")
add("linalg.eigh", "square", "floating", "hermitian", tolerance="linalg", view="eigh")
add("linalg.eigvalsh", "square", "floating", "hermitian", tolerance="linalg")
add("linalg.inv", "square", "floating", "wellcond", tolerance="linalg")
add("linalg.matmul", "matmul", "numeric", "bounded", tolerance="reduction")
add("linalg.matrix_norm", "matrix", "floating", "bounded", kw=("keepdims", "matrix_ord"), tolerance="linalg")
add("linalg.matrix_power", "matrix_power", "floating", "wellcond", tolerance="linalg")
add("linalg.matrix_rank", "matrix", "floating", "bounded", kw=("rtol",), tolerance="exact")
add("linalg.matrix_transpose", "matrix_rank2", "any", tolerance="exact")
add("linalg.outer", "outer", "numeric", "bounded", tolerance="elementwise")
add("linalg.pinv", "matrix", "floating", "wellcond", kw=("rtol",), tolerance="linalg")
add("linalg.qr", "matrix", "floating", "wellcond", kw=("qr_mode",), tolerance="linalg", view="qr")
add("linalg.slogdet", "square", "floating", "wellcond", tolerance="linalg")
add("linalg.solve", "solve", "floating", "wellcond", tolerance="linalg")
add("linalg.svd", "matrix", "floating", "bounded", kw=("full_matrices",), tolerance="linalg", view="svd")
add("linalg.svdvals", "matrix", "floating", "bounded", tolerance="linalg")
add("linalg.tensordot", "tensordot", "numeric", "bounded", tolerance="reduction")
add("linalg.trace", "matrix", "numeric", "bounded", kw=("offset", "trace_dtype"), tolerance="reduction")
add("linalg.vecdot", "vecdot", "numeric", "bounded", tolerance="reduction")
add("linalg.vector_norm", "unary", "floating", "bounded", kw=("axes", "keepdims", "vector_ord"), tolerance="linalg")
