"""Linear algebra: the standard's main-namespace functions and its ``linalg`` extension.

``__all__`` holds the four functions of the main namespace (``matmul``,
``matrix_transpose``, ``tensordot``, ``vecdot``), which ``arrayx`` star-imports;
``EXTENSION_ALL`` the names of ``arrayx.linalg``.  The extension's ``matmul``,
``matrix_transpose``, ``tensordot`` and ``vecdot`` are the same functions.

Each function checks its arguments, promotes with arrayx's table and binds a
primitive named after it (``impl_name`` points into the executor namespace's
``linalg``).  Functions that are short compositions of other primitives are
written as such, so that transforms get them for free: ``outer`` (multiply),
``matrix_power`` (matmul, inv), ``matrix_norm`` (vector_norm, svdvals),
``pinv`` (svd, matmul) and ``matrix_rank`` (svdvals).

Primitive contracts: operands are promoted to one dtype; under a transform the
batch dimensions of ``matmul``/``vecdot``/``solve``/``cross`` operands are
broadcast to each other first (eagerly the executors broadcast them).
"""
from __future__ import annotations

import builtins
import math
import numbers
import operator
from typing import NamedTuple

import numpy as np

from arrayx.api import _device_dtypes, _dtypes
from arrayx.api._device_dtypes import for_array
from arrayx.api._array import Array
from arrayx.api._checks import (
    array_arg, array_args, broadcast_shapes_for, cast, float_arg, int_arg, normalize_axes, promote_dtypes, with_article,
)
from arrayx.api._modes import is_strict
from arrayx.api import elementwise as _ew
from arrayx.core import primitives as _prims
from arrayx.core.primitives import _TRACE, Primitive, _object_new

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]

EXTENSION_ALL = [
    "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr",
    "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]

_CAT = _dtypes.CATEGORIES
_trace_now = _TRACE.get  # the active trace, None when eager (bound once: the fast paths call it)
_PROMOTION = _dtypes.PROMOTION


# -- results of the decompositions ------------------------------------------------------


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


# -- argument checks ----------------------------------------------------------------------


def _typed_arg(fname: str, x, category: str, name: str = "x") -> Array:
    if category in _dtypes.FLOAT_ONLY:  # bool/integer input: float64 in the default mode (NumPy 2), refused in strict
        return float_arg(fname, x, category, name, "; convert with astype(x, float64) first")
    x = array_arg(fname, x, name)
    if x.dtype not in _CAT[category]:
        raise TypeError(f"{fname}: {name} must have {with_article(category)} dtype, got {x.dtype}")
    return x


def _matrix_arg(fname: str, x, category: str, *, square: bool = False, name: str = "x") -> Array:
    x = _typed_arg(fname, x, category, name)
    if category == "floating-point" and x.dtype in _dtypes.extension_dtypes:  # LAPACK has no 16-bit floats
        raise TypeError(f"{fname}: {name} has dtype {x.dtype}, which the linear-algebra routines (LAPACK, in "
                        f"NumPy and XLA alike) do not take; cast it first, e.g. astype({name}, arrayx.float32)")
    if x.ndim < 2:
        raise ValueError(
            f"{fname}: {name} must be a matrix or a stack of matrices (at least 2-D), got shape {x.shape}"
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fname}: {name} must be a stack of square matrices, got shape {x.shape}")
    return x


def _promote_pair(fname: str, x1, x2, category: str) -> tuple:
    """Two arrays of ``category`` promoted to their common dtype (a Python scalar is weak beside an array)."""
    x1, x2 = array_args(fname, (x1, x2), ("x1", "x2"))
    x1 = _typed_arg(fname, x1, category, "x1")
    x2 = _typed_arg(fname, x2, category, "x2")
    if x1.dtype != x2.dtype:
        dt = promote_dtypes(fname, (x1.dtype, x2.dtype))
        return cast(x1, dt), cast(x2, dt)
    return x1, x2


def _broadcast_batch(x: Array, batch: tuple, core: int) -> Array:
    """Under a transform, ``x`` with its leading (batch) dimensions broadcast to ``batch``."""
    if _TRACE.get() is None or x.shape[: x.ndim - core] == batch:
        return x
    from arrayx.api.manipulation import broadcast_to

    return broadcast_to(x, batch + tuple(x.shape[x.ndim - core:]))


def _negative_axis(fname: str, axis, ndims: tuple) -> int:
    """``axis`` of operands with ``ndims`` dimensions as a negative int (the standard counts from the end)."""
    a = int_arg(fname, axis, "axis")
    n = builtins.min(ndims)
    if a >= 0 and builtins.all(d == ndims[0] for d in ndims):
        a -= ndims[0]
    if not -n <= a <= -1:
        raise ValueError(
            f"{fname}: axis={axis} is out of range; it must be a negative int in [-{n}, -1] "
            f"(counted from the last dimension) for operands with {', '.join(map(str, ndims))} dimensions"
        )
    return a


# -- main namespace ------------------------------------------------------------------------

matmul_p = Primitive("matmul")
matrix_transpose_p = Primitive("matrix_transpose")
tensordot_p = Primitive("tensordot")
vecdot_p = Primitive("vecdot")


#: the standard's numeric dtypes (never float16 or bfloat16, whatever the categories hold)
_STANDARD_NUMERIC = frozenset(_dtypes.numeric_dtypes)
#: (wrapper, function) for the last executor matmul the fast path met: where the executor's function
#: is a narrow-float wrapper (``widens_narrow_floats``, executors/common/narrow_floats.py: it calls its
#: ``__wrapped__`` for every dtype but float16/bfloat16), the fast path calls that function itself on
#: the standard dtypes, a frame less (~0.1 us of ~0.6); one tuple, so a thread reads a consistent pair
_UNWRAPPED: tuple = (None, None)


def _unwrapped(fn):
    """The function ``fn`` calls for the standard dtypes (itself unless a narrow-float wrapper)."""
    global _UNWRAPPED
    inner = fn.__wrapped__ if getattr(fn, "widens_narrow_floats", False) else fn
    _UNWRAPPED = (fn, inner)
    return inner


def matmul(x1, x2, /) -> Array:
    """Matrix product ``x1 @ x2`` (1-D operands are vectors, batch dimensions broadcast)."""
    if x1.__class__ is Array and x2.__class__ is Array and _trace_now() is None:
        # eager fast path: two arrays of one executor and dtype; when the executor refuses the
        # shapes, the checked path below raises the error naming them (no side effects to undo)
        b1, b2 = x1._buf, x2._buf
        dt = b1.dtype
        ex = x1._ex
        standard = dt in _STANDARD_NUMERIC  # (not float16/bfloat16: numeric, past a narrow-float wrapper)
        if x2._ex is ex and (dt is b2.dtype or dt == b2.dtype) and (standard or dt in _CAT["numeric"]):
            try:
                # run_eager2, spelled out (one frame less)
                m = ex.pool_min_bytes
                if m and b1.size * b2.nbytes >= m and (b1.nbytes >= m or b1.shape != b2.shape):
                    fn = ex.large_impls.get(matmul_p) or ex.resolve_large(matmul_p)
                else:
                    try:
                        fn = ex.impls[matmul_p]
                    except KeyError:
                        fn = ex.resolve(matmul_p)
                if standard:
                    pair = _UNWRAPPED
                    fn = pair[1] if fn is pair[0] else _unwrapped(fn)
                out = fn(b1, b2)
                if out.__class__ is not ex.array_type:
                    out = ex.coerce(out)
                if _prims.eager_hook is not None:
                    out = _prims.eager_hook(matmul_p, ex, (b1, b2), None, out)
                new = _object_new(Array)
                new._buf = out
                new._ex = ex
                return new
            except (ValueError, TypeError):
                pass
    x1, x2 = _promote_pair("matmul", x1, x2, "numeric")
    s1, s2 = x1.shape, x2.shape
    if not s1 or not s2:
        raise ValueError(f"matmul: operands must have at least one dimension, got shapes {s1} and {s2}")
    k1 = s1[-1]
    k2 = s2[0] if len(s2) == 1 else s2[-2]
    if k1 != k2:
        raise ValueError(
            f"matmul: shapes {s1} and {s2} do not align: the last dimension of x1 ({k1}) must equal "
            f"the {'only' if len(s2) == 1 else 'second-to-last'} dimension of x2 ({k2})"
        )
    if len(s1) > 2 or len(s2) > 2:
        batch = broadcast_shapes_for("matmul", s1[:-2], s2[:-2])
        if len(s1) >= 2:
            x1 = _broadcast_batch(x1, batch, 2)
        if len(s2) >= 2:
            x2 = _broadcast_batch(x2, batch, 2)
    return matmul_p.bind(x1, x2)


def matrix_transpose(x, /) -> Array:
    """Transpose of the last two dimensions of ``x`` (``x.mT``)."""
    x = array_arg("matrix_transpose", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got shape {x.shape}")
    if x._ex.mutable and _TRACE.get() is None:
        return matrix_transpose_p.bind(x)  # NumPy's own view
    # a view on JAX/Dask and under transforms, as permute_dims and NumPy's (its own inverse)
    from arrayx.api import _views

    return _views.whole_view(x, matrix_transpose_p.bind, matrix_transpose_p.bind)


def _tensordot_axes(x1: Array, x2: Array, axes) -> tuple:
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise ValueError(
                f"tensordot: axes must be an int or a pair (x1_axes, x2_axes), got {axes!r}"
            )
        a1, a2 = ((a,) if not isinstance(a, (tuple, list)) else a for a in axes)
        a1 = tuple(_tensordot_axis(a, x1.ndim, "x1") for a in a1)
        a2 = tuple(_tensordot_axis(a, x2.ndim, "x2") for a in a2)
        if len(a1) != len(a2):
            raise ValueError(f"tensordot: axes {axes} names {len(a1)} axes of x1 but {len(a2)} of x2")
        if len(set(a1)) != len(a1) or len(set(a2)) != len(a2):
            raise ValueError(f"tensordot: axes {axes} repeat an axis")
        return a1, a2
    if isinstance(axes, bool):
        raise TypeError("tensordot: axes must be an int or a pair of sequences of ints, got a bool")
    try:
        n = operator.index(axes)
    except TypeError:
        raise TypeError(
            f"tensordot: axes must be an int or a pair of sequences of ints, got {axes!r}"
        ) from None
    if n < 0 or n > x1.ndim or n > x2.ndim:
        raise ValueError(
            f"tensordot: axes={n} must be in [0, {builtins.min(x1.ndim, x2.ndim)}] for operands "
            f"of shapes {x1.shape} and {x2.shape}"
        )
    return tuple(range(x1.ndim - n, x1.ndim)), tuple(range(n))


def _tensordot_axis(a, ndim: int, name: str) -> int:
    try:
        a = operator.index(a)
    except TypeError:
        raise TypeError(f"tensordot: axes must contain ints, got {a!r}") from None
    if not -ndim <= a < ndim:
        raise ValueError(f"tensordot: axis {a} is out of range for {name} with {ndim} dimension(s)")
    return a % ndim


def tensordot(x1, x2, /, *, axes=2) -> Array:
    """Contraction of ``x1`` and ``x2`` over ``axes`` (an int N or a pair of axis sequences)."""
    x1, x2 = _promote_pair("tensordot", x1, x2, "numeric")
    a1, a2 = _tensordot_axes(x1, x2, axes)
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(
                f"tensordot: contracted axes differ in size: x1 axis {i} has {x1.shape[i]}, "
                f"x2 axis {j} has {x2.shape[j]} (shapes {x1.shape} and {x2.shape})"
            )
    return tensordot_p.bind(x1, x2, axes=(a1, a2))


def vecdot(x1, x2, /, *, axis: int = -1) -> Array:
    """Dot products of the vectors along ``axis``, conjugating ``x1``: sum(conj(x1) * x2)."""
    x1, x2 = _promote_pair("vecdot", x1, x2, "numeric")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(f"vecdot: operands must have at least one dimension, got shapes {x1.shape} and {x2.shape}")
    axis = _negative_axis("vecdot", axis, (x1.ndim, x2.ndim))
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(
            f"vecdot: the contracted axis {axis} differs in size ({x1.shape[axis]} and {x2.shape[axis]}) "
            f"for shapes {x1.shape} and {x2.shape}"
        )
    shape = broadcast_shapes_for("vecdot", x1.shape, x2.shape)
    x1 = _broadcast_batch(x1, shape, 0)
    x2 = _broadcast_batch(x2, shape, 0)
    return vecdot_p.bind(x1, x2, axis=axis)


# -- the linalg extension ---------------------------------------------------------------------

cholesky_p = Primitive("cholesky", impl_name="linalg.cholesky")
cross_p = Primitive("cross", impl_name="linalg.cross")
det_p = Primitive("det", impl_name="linalg.det")
diagonal_p = Primitive("diagonal", impl_name="linalg.diagonal")
eig_p = Primitive("eig", impl_name="linalg.eig", multiple_results=True)
eigh_p = Primitive("eigh", impl_name="linalg.eigh", multiple_results=True)
eigvals_p = Primitive("eigvals", impl_name="linalg.eigvals")
eigvalsh_p = Primitive("eigvalsh", impl_name="linalg.eigvalsh")
inv_p = Primitive("inv", impl_name="linalg.inv")
qr_p = Primitive("qr", impl_name="linalg.qr", multiple_results=True)
slogdet_p = Primitive("slogdet", impl_name="linalg.slogdet", multiple_results=True)
solve_p = Primitive("solve", impl_name="linalg.solve")
svd_p = Primitive("svd", impl_name="linalg.svd", multiple_results=True)
svdvals_p = Primitive("svdvals", impl_name="linalg.svdvals")
trace_p = Primitive("trace", impl_name="linalg.trace")
vector_norm_p = Primitive("vector_norm", impl_name="linalg.vector_norm")


def cholesky(x, /, *, upper: bool = False) -> Array:
    """Cholesky factor of Hermitian positive-definite matrices: L (x = L L^H) or, with ``upper``, U."""
    x = _matrix_arg("cholesky", x, "floating-point", square=True)
    return cholesky_p.bind(x, upper=builtins.bool(upper))


def cross(x1, x2, /, *, axis: int = -1) -> Array:
    """Cross products of the 3-element vectors along ``axis`` (other dimensions broadcast)."""
    x1, x2 = _promote_pair("cross", x1, x2, "numeric")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(f"cross: operands must have at least one dimension, got shapes {x1.shape} and {x2.shape}")
    axis = _negative_axis("cross", axis, (x1.ndim, x2.ndim))
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            f"cross: axis {axis} must have size 3 in both operands, got shapes {x1.shape} and {x2.shape}"
        )
    shape = broadcast_shapes_for("cross", x1.shape, x2.shape)
    x1 = _broadcast_batch(x1, shape, 0)
    x2 = _broadcast_batch(x2, shape, 0)
    return cross_p.bind(x1, x2, axis=axis)


def det(x, /) -> Array:
    """Determinants of a (stack of) square matrices."""
    x = _matrix_arg("det", x, "floating-point", square=True)
    return det_p.bind(x)


def diagonal(x, /, *, offset: int = 0) -> Array:
    """The ``offset``-th diagonals of the last two dimensions, as the last dimension."""
    x = _matrix_arg("diagonal", x, "all")
    return diagonal_p.bind(x, offset=int_arg("diagonal", offset, "offset"))


def eig(x, /) -> EigResult:
    """Eigenvalues and right eigenvectors of general square matrices (complex results)."""
    x = _matrix_arg("eig", x, "floating-point", square=True)
    dt = _dtypes.COMPLEX_OF.get(x.dtype, x.dtype)
    w, v = eig_p.bind(x)
    # executors may return real results for real spectra; the standard's dtype is complex
    return EigResult(cast(w, dt), cast(v, dt))


def eigvals(x, /) -> Array:
    """Eigenvalues of general square matrices (complex results)."""
    x = _matrix_arg("eigvals", x, "floating-point", square=True)
    return cast(eigvals_p.bind(x), _dtypes.COMPLEX_OF.get(x.dtype, x.dtype))


def eigh(x, /) -> EighResult:
    """Eigenvalues (real, ascending) and eigenvectors of Hermitian / real symmetric matrices."""
    x = _matrix_arg("eigh", x, "floating-point", square=True)
    w, v = eigh_p.bind(x)
    return EighResult(w, v)


def eigvalsh(x, /) -> Array:
    """Eigenvalues (real, ascending) of Hermitian / real symmetric matrices."""
    x = _matrix_arg("eigvalsh", x, "floating-point", square=True)
    return eigvalsh_p.bind(x)


def inv(x, /) -> Array:
    """Inverses of a (stack of) square matrices."""
    x = _matrix_arg("inv", x, "floating-point", square=True)
    return inv_p.bind(x)


_MATRIX_NORM_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _is_matrix_ord(ord) -> bool:
    if isinstance(ord, str):
        return ord in ("fro", "nuc")
    if isinstance(ord, builtins.bool) or not isinstance(ord, numbers.Real):
        return False
    return ord in _MATRIX_NORM_ORDS[2:]


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> Array:
    """Matrix norms of the last two dimensions: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf."""
    x = _matrix_arg("matrix_norm", x, "floating-point")
    if not _is_matrix_ord(ord):
        raise ValueError(f"matrix_norm: ord must be one of {_MATRIX_NORM_ORDS}, got {ord!r}")
    keepdims = builtins.bool(keepdims)
    if ord == "fro":
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims, ord=2)
    if ord == "nuc":
        out = vector_norm(svdvals(x), axis=-1, ord=1)
    elif ord in (2, -2):
        # singular values are non-negative, so their max/min is their inf/-inf norm
        out = vector_norm(svdvals(x), axis=-1, ord=math.inf if ord == 2 else -math.inf)
    else:
        # 1/-1: max/min over columns of the column sums of |x|; inf/-inf: the same over rows
        summed_axis = -2 if ord in (1, -1) else -1
        extreme = math.inf if ord > 0 else -math.inf
        out = vector_norm(vector_norm(x, axis=summed_axis, ord=1), axis=-1, ord=extreme)
    return out[..., None, None] if keepdims else out


def matrix_power(x, n, /) -> Array:
    """``x`` to the integer power ``n`` (the identity for 0, powers of ``inv(x)`` for n < 0)."""
    n = int_arg("matrix_power", n, "n")
    # the default mode keeps an integer matrix's dtype for n >= 0, as NumPy 2 and JAX do
    keep_int = not is_strict() and n >= 0 and getattr(x, "dtype", None) in _CAT["integral"]
    x = _matrix_arg("matrix_power", x, "integral" if keep_int else "floating-point", square=True)
    if n == 0:
        from arrayx.api.creation import ones_like, tril, triu

        return triu(tril(ones_like(x)))
    if n < 0:
        x, n = inv(x), -n
    # binary exponentiation: about log2(n) products
    result = None
    square = x
    while True:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if not n:
            return result
        square = matmul(square, square)


def _singular_cutoff(fname: str, x: Array, s: Array, rtol) -> Array:
    """``rtol * largest singular value`` per matrix, shaped (..., 1) to compare with ``s``."""
    real = _dtypes.REAL_OF.get(x.dtype, x.dtype)
    largest = s[..., :1]  # singular values come sorted in descending order
    if rtol is None:
        return largest * float(builtins.max(x.shape[-2:]) * np.finfo(real).eps)
    if isinstance(rtol, Array):
        if rtol.dtype not in _CAT["real floating"]:
            raise TypeError(f"{fname}: rtol must have a real floating-point dtype, got {rtol.dtype}")
        broadcast_shapes_for(fname, rtol.shape, x.shape[:-2])
        return _ew.multiply(largest, rtol[..., None])
    if isinstance(rtol, builtins.bool) or not isinstance(rtol, numbers.Real):
        raise TypeError(f"{fname}: rtol must be a float, an array or None, got {type(rtol).__name__}")
    return largest * float(rtol)


def matrix_rank(x, /, *, rtol=None) -> Array:
    """Ranks: the number of singular values above ``rtol`` times the largest (default max(M, N)*eps)."""
    x = array_arg("matrix_rank", x)
    if x.dtype.kind in "biu":  # both modes: array-api-strict takes integer and bool input here too
        x = cast(x, for_array(x).real)
    x = _matrix_arg("matrix_rank", x, "floating-point")
    s = svdvals(x)
    above = _ew.greater(s, _singular_cutoff("matrix_rank", x, s, rtol))
    from arrayx.api.searching import count_nonzero

    return count_nonzero(above, axis=-1)


def outer(x1, x2, /) -> Array:
    """Outer product of two vectors: ``out[i, j] = x1[i] * x2[j]``."""
    x1, x2 = _promote_pair("outer", x1, x2, "numeric")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: x1 and x2 must be 1-D, got shapes {x1.shape} and {x2.shape}")
    return _ew.multiply(x1[:, None], x2[None, :])


def pinv(x, /, *, rtol=None) -> Array:
    """Moore-Penrose pseudo-inverses (singular values at or below ``rtol`` times the largest are dropped)."""
    x = _matrix_arg("pinv", x, "floating-point")
    u, s, vh = svd(x, full_matrices=False)
    kept = _ew.greater(s, _singular_cutoff("pinv", x, s, rtol))
    # 1/s where kept, 0 elsewhere, without dividing by zero: kept / (s + not kept)
    kept_f = cast(kept, s.dtype)
    s_inv = _ew.divide(kept_f, _ew.add(s, _ew.subtract(1, kept_f)))
    v_scaled = _ew.multiply(_ew.conj(matrix_transpose(vh)), s_inv[..., None, :])
    return matmul(v_scaled, _ew.conj(matrix_transpose(u)))


def qr(x, /, *, mode: str = "reduced") -> QRResult:
    """QR decomposition of a (stack of) matrices; ``mode`` 'reduced' or 'complete'."""
    x = _matrix_arg("qr", x, "floating-point")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = qr_p.bind(x, mode=mode)
    return QRResult(q, r)


def slogdet(x, /) -> SlogdetResult:
    """Sign and log of the absolute value of determinants (sign 0 and logabsdet -inf if singular)."""
    x = _matrix_arg("slogdet", x, "floating-point", square=True)
    sign, logabsdet = slogdet_p.bind(x)
    return SlogdetResult(sign, logabsdet)


def solve(x1, x2, /) -> Array:
    """Solution X of ``x1 @ X = x2`` (x2 of shape (M,) is one vector, (..., M, K) K columns)."""
    x1, x2 = _promote_pair("solve", x1, x2, "floating-point")
    _matrix_arg("solve", x1, "floating-point", square=True, name="x1")
    m = x1.shape[-1]
    if x2.ndim == 1:
        if x2.shape[0] != m:
            raise ValueError(f"solve: x2 of shape {x2.shape} does not match x1 of shape {x1.shape}; it needs {m} entries")
        return solve_p.bind(x1, x2)
    if x2.ndim == 0 or x2.shape[-2] != m:
        raise ValueError(
            f"solve: x2 must have shape ({m},) or (..., {m}, K) to match x1 of shape {x1.shape}, got {x2.shape}"
        )
    batch = broadcast_shapes_for("solve", x1.shape[:-2], x2.shape[:-2])
    return solve_p.bind(_broadcast_batch(x1, batch, 2), _broadcast_batch(x2, batch, 2))


def svd(x, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition x = U diag(S) Vh, singular values in descending order."""
    x = _matrix_arg("svd", x, "floating-point")
    u, s, vh = svd_p.bind(x, full_matrices=builtins.bool(full_matrices))
    return SVDResult(u, s, vh)


def svdvals(x, /) -> Array:
    """Singular values in descending order (real, the precision of x)."""
    x = _matrix_arg("svdvals", x, "floating-point")
    return svdvals_p.bind(x)


def trace(x, /, *, offset: int = 0, dtype=None) -> Array:
    """Sums along the ``offset``-th diagonals of the last two dimensions."""
    x = _matrix_arg("trace", x, "numeric")
    offset = int_arg("trace", offset, "offset")
    if dtype is None:
        # small integers accumulate in the default integer of x's device (of their signedness)
        if x.dtype in _CAT["signed integer"]:
            dtype = max(for_array(x).integral, x.dtype, key=lambda d: d.itemsize)
        elif x.dtype in _CAT["unsigned integer"]:
            dtype = max(for_array(x).unsigned, x.dtype, key=lambda d: d.itemsize)
        else:
            dtype = x.dtype
    else:
        dtype = _dtypes.as_dtype(dtype, "trace")
        if dtype not in _CAT["numeric"]:
            raise TypeError(f"trace: dtype must be numeric, got {dtype}")
        if dtype in _device_dtypes.WIDE and dtype != x.dtype:  # an explicit 64-bit request: the device's setting
            dd = for_array(x)
            if not dd.native64:
                dtype = _device_dtypes.requested(dtype, dd, x._ex, x.device, "trace")
    # executors sum small integers in a wider type: the result is cast back to the dtype asked for
    return cast(trace_p.bind(cast(x, dtype), offset=offset), dtype)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> Array:
    """Vector norms over ``axis`` (None: all): p-norms for any real ``ord``, plus 0 and +-inf."""
    x = _typed_arg("vector_norm", x, "floating-point")
    if isinstance(ord, builtins.bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"vector_norm: ord must be an int or a float (inf allowed), got {ord!r}")
    if ord != ord:
        raise ValueError("vector_norm: ord must not be nan")
    axis = normalize_axes("vector_norm", axis, x.ndim)
    if axis is not None and len(axis) == x.ndim:
        axis = None
    ord = int(ord) if isinstance(ord, numbers.Integral) else float(ord)  # plain Python params
    out = vector_norm_p.bind(x, axis=axis, keepdims=builtins.bool(keepdims), ord=ord)
    return cast(out, _dtypes.REAL_OF.get(x.dtype, x.dtype))
